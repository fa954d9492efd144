package main

import (
	"context"
	"errors"
	"io"
)

// runServe starts the web viewer. The server lands with the web issue.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("serve: the web viewer is not built yet")
}
