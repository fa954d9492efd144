// Package ui holds what the browser gets: the pages (templ templates in
// ui/templates) and the timeline's code and styles in ui/static, which are
// embedded into the binary here.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed all:static
var static embed.FS

// Static returns the files of ui/static, served under /static/.
func Static() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("invariant violation: ui: " + err.Error()) // "static" is a valid path
	}
	return sub
}
