// Package option lets a library name one of its options in a message
// without knowing how its caller spells it. A message names an option as
// {Key} (the option's Go name: {MaxStates}, {Semantics}); Errorf and
// Sprintf replace each such key, when the message is made, by the
// spelling the program set with Spell (the command line: its flags,
// "--max-states"), else by the library's own (Library, or the key). So no
// library error names a flag, and pepa's messages read as they always
// have.
//
// Invariants: Spell is called once, before any message is made (pepa
// calls it from an init function of package main); a key is an upper-case
// letter followed by letters and digits between braces, so JSON or set
// notation in a message ({"name": ...}, {a, b}) is left alone; a key
// without a spelling stays as its library spelling.
package option
