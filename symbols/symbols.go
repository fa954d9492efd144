// Package symbols resolves numbers to names, format-neutrally: address-sorted
// symbol tables (CPEL's SYMTAB section, and any other source of routine
// start addresses). Format knowledge lives with the formats: VPP's
// printf-style labels in trace/vppfmt, .NET method maps in trace/clr.
package symbols

import (
	"cmp"
	"slices"
	"strconv"
)

// Symbol is one named value: a routine's start address.
type Symbol struct {
	Value uint64
	Name  string
}

// Table is a symbol table sorted by value. The zero Table is empty.
type Table struct {
	syms []Symbol
}

// NewTable returns a table of syms (copied and sorted by value; among equal
// values the first given wins a lookup).
func NewTable(syms []Symbol) *Table {
	s := slices.Clone(syms)
	slices.SortStableFunc(s, func(a, b Symbol) int { return cmp.Compare(a.Value, b.Value) })
	return &Table{syms: s}
}

// Len returns the number of symbols.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}

// Symbols returns the symbols in value order. The caller must not modify
// the slice.
func (t *Table) Symbols() []Symbol {
	if t == nil {
		return nil
	}
	return t.syms
}

// Lookup returns the symbol nearest at or below v, and false when v lies
// below the first symbol or the table is empty.
func (t *Table) Lookup(v uint64) (Symbol, bool) {
	if t == nil || len(t.syms) == 0 {
		return Symbol{}, false
	}
	// First index with Value > v; the answer is the one before it. Among
	// equal values take the first, so walk back over duplicates.
	i, _ := slices.BinarySearchFunc(t.syms, v, func(s Symbol, v uint64) int {
		if s.Value <= v {
			return -1
		}
		return 1
	})
	if i == 0 {
		return Symbol{}, false
	}
	i--
	for i > 0 && t.syms[i-1].Value == t.syms[i].Value {
		i--
	}
	return t.syms[i], true
}

// AppendName appends v as "name" when it is a symbol's value, as
// "name+0x1c" when it lies above one, and reports false (appending
// nothing) when no symbol is at or below v.
func (t *Table) AppendName(dst []byte, v uint64) ([]byte, bool) {
	s, ok := t.Lookup(v)
	if !ok {
		return dst, false
	}
	dst = append(dst, s.Name...)
	if off := v - s.Value; off != 0 {
		dst = append(dst, "+0x"...)
		dst = strconv.AppendUint(dst, off, 16)
	}
	return dst, true
}

// Name returns v rendered as by AppendName.
func (t *Table) Name(v uint64) (string, bool) {
	b, ok := t.AppendName(nil, v)
	return string(b), ok
}
