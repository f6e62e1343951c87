//go:build !unix

package credentials

import "os"

func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
