//go:build !(linux && (amd64 || arm64))

package render

import "os"

// dropsPages says that dropPages drops pages here.
const dropsPages = false

func startWriteback(f *os.File, from, to int64) {}

func dropPages(f *os.File, from, to int64) {}
