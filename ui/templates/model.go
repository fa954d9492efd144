// Package templates renders the viewer's HTML pages with templ. Each page
// has one view-model struct that package web fills; the templates only
// display it. Data for the page's script travels as one JSON blob in a
// <script type="application/json" id="page-data"> element, never inside
// script code.
//
// The *_templ.go files are generated: after changing a .templ file run
// `go tool templ generate` from the repository root (file names in the
// generated code are relative to where it runs, and CI checks them from
// the root) and commit the result.
package templates

// Assets are the URLs of the static files a page links, with their
// content hashes in the query so that browsers may cache them forever.
type Assets struct {
	CSS       string // /static/viewer.css?h=…
	ViewerJS  string // /static/viewer.js?h=…
	LibraryJS string // /static/library.js?h=…
}

// LibraryPage is the view model of the library page.
type LibraryPage struct {
	Assets Assets
	Traces []TraceRow
	// MaxUpload is the upload limit, shown to the user ("2 GiB").
	MaxUpload string
	// Data is the page-data blob.
	Data any
}

// TraceRow is one trace in the library, formatted for display.
type TraceRow struct {
	ID       string
	Name     string
	Format   string
	Size     string
	Events   string // empty while not indexed
	Span     string // empty while not indexed
	Uploaded string
	State    string
	Error    string
}

// ViewerPage is the view model of the viewer page.
type ViewerPage struct {
	Assets Assets
	Title  string // the trace's file name
	Data   any    // the page-data blob
}

// ErrorPage is the view model of an error page.
type ErrorPage struct {
	Assets  Assets
	Status  string // "404 Not Found"
	Message string
}

// ComparePage is the view model of the compare page: two traces, or two
// ranges of one, side by side.
type ComparePage struct {
	Assets Assets
	Script string // the page's module: /static/js/comparepage.js?h=…
	A, B   string // the two traces' file names
	Data   any    // the page-data blob
}
