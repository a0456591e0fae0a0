package main

import (
	"fmt"
	"os"
	"strconv"

	"pepa/internal/randmodel"
)

func main() {
	for _, a := range os.Args[1:] {
		s, _ := strconv.ParseInt(a, 10, 64)
		m := randmodel.Generate(s)
		fmt.Println("//", s, m.Family, m.Features, m.Machines, m.Cycles)
		fmt.Print(m.Source)
	}
}
