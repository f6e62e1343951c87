// Command gen writes podstart's staticpods/internal/core/zz_generated.types.go
// (see package gencore). Run it through go generate in that directory.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/podstart/podstart/test/diff/internal/gencore"
)

func main() {
	out := flag.String("o", "", "output file")
	flag.Parse()
	src, err := gencore.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
