package render

import "viewer/trace"

// Labels returns one of the trace's label lists (activity ids and other
// labels, [trace.Reader.Labels]): nil for trace.NoLabels or an unknown
// id, and nil for an Index opened from a file before Attach. Like
// Details it is only called after reading has finished.
func (x *Index) Labels(id trace.LabelsID) []trace.Label {
	r, err := x.reader()
	if err != nil {
		return nil
	}
	return r.Labels(id)
}

// EventReader reads event headers of an index one after another, keeping
// the spill run it read last, so a walk along one track decodes each run
// once instead of once per event ([Index.Event]). Use one per track when
// walking several in time order. It is not safe for concurrent use.
type EventReader struct {
	x  *Index
	rr runReader
}

// NewEventReader returns an EventReader over x.
func (x *Index) NewEventReader() *EventReader {
	return &EventReader{x: x, rr: runReader{s: x.spill}}
}

// Event returns the full header of an event, as [Index.Event] does.
func (r *EventReader) Event(id EventID) (trace.Event, error) { return r.x.event(&r.rr, id) }
