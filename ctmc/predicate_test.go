package ctmc

import (
	"reflect"
	"strings"
	"testing"
)

// TestPredicateTokens: the tokens of Predicate's syntax, written out by
// hand from the grammar: two-character operators before one-character
// ones, quoted names kept whole (spaces, parentheses and operator
// characters inside), names ending at any operator character.
func TestPredicateTokens(t *testing.T) {
	type tok = PredicateToken
	for text, want := range map[string][]tok{
		"M1 == Done": {{Text: "M1"}, {Text: "=="}, {Text: "Done"}},
		"!(a!=b)||c==d": {{Text: "!"}, {Text: "("}, {Text: "a"}, {Text: "!="}, {Text: "b"}, {Text: ")"},
			{Text: "||"}, {Text: "c"}, {Text: "=="}, {Text: "d"}},
		"M1 == \"(compute9, r9).M1\" && \t X[2]!=Y": {{Text: "M1"}, {Text: "=="}, {Text: "(compute9, r9).M1", Quoted: true},
			{Text: "&&"}, {Text: "X[2]"}, {Text: "!="}, {Text: "Y"}},
		"\"==\"": {{Text: "==", Quoted: true}},
		"":       nil,
	} {
		got, err := PredicateTokens(text)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("PredicateTokens(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	if toks, _ := PredicateTokens("\"==\""); toks[0].Is("==") {
		t.Error("a quoted == is an operator; want a name")
	}
	for text, msg := range map[string]string{"M1 == \"Done": "unterminated quote", "M1 & Done": "unexpected \"&\"", "a = b": "unexpected \"=\""} {
		if _, err := PredicateTokens(text); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("PredicateTokens(%q): error %v, want %q", text, err, msg)
		}
	}
}
