package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// staticFiles serves the embedded browser files with content-hash ETags:
// embedded files have no modification time, so without them a browser
// could neither cache nor revalidate.
type staticFiles struct {
	files map[string]staticFile // by path, e.g. "viewer.js"
}

type staticFile struct {
	data []byte
	hash string // hex SHA-256, first 16 digits
}

// newStaticFiles reads every file of fsys once.
func newStaticFiles(fsys fs.FS) (*staticFiles, error) {
	sf := &staticFiles{files: map[string]staticFile{}}
	if fsys == nil {
		return sf, nil
	}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		sf.files[path] = staticFile{data: data, hash: hex.EncodeToString(sum[:8])}
		return nil
	})
	return sf, err
}

// URL returns the path of a static file with its content hash as ?h=,
// or without when the file does not exist (the browser then gets a 404
// it can report).
func (sf *staticFiles) URL(name string) string {
	if f, ok := sf.files[name]; ok {
		return "/static/" + name + "?h=" + f.hash
	}
	return "/static/" + name
}

// ServeHTTP serves /static/{path}.
func (sf *staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	f, ok := sf.files[name]
	if !ok || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("ETag", `"`+f.hash+`"`)
	if r.URL.Query().Get("h") == f.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}
