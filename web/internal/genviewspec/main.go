// Command genviewspec writes the page's copy of the URL-state grammar,
// web.ViewSpecJS, to the file its argument names. `go generate ./web`
// runs it (see web/viewspec.go); web's tests fail when the file is stale.
package main

import (
	"fmt"
	"os"

	"viewer/web"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genviewspec FILE.js")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], web.ViewSpecJS(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
