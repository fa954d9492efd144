// Package export turns traces into the documents the command line and the
// API hand out: the JSON object of one event that `viewer dump` writes a
// line of ([Encoder], [AppendEvent]), the JSON of decoded values
// ([AppendValue], [AppendFields]) and the summary `viewer stats` prints
// ([Stats], gathered by a [Counter] or [Collect]).
//
// The model (package trace) knows nothing of these encodings: readers
// decode, this package presents.
package export
