// Command curl is the curl of the conformance tier's agnhost image (upstream's
// has Alpine's; Debian has no static one): "curl URL" does a GET and writes
// the body to stdout, exiting 0 on any HTTP answer, as curl without -f
// does, and 7 when it cannot connect. That is all the specs in scope ask of
// it (the lifecycle hook specs' exec hooks).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	var url string
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			url = a
		}
	}
	if url == "" {
		fmt.Fprintln(os.Stderr, "curl: usage: curl URL")
		os.Exit(2)
	}
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "curl:", err)
		os.Exit(7)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		fmt.Fprintln(os.Stderr, "curl:", err)
		os.Exit(56)
	}
}
