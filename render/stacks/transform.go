package stacks

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// Op is a transform's kind; its letter is its code in the tf list.
type Op byte

const (
	// Focus keeps the stacks through a function, rooted at it: the
	// frames from its occurrence nearest the root to the leaf.
	Focus Op = 'f'
	// Merge removes a function's frames: its callees hang from its
	// caller.
	Merge Op = 'm'
	// Module collapses a module: every run of frames "MOD!…" becomes one
	// frame "MOD".
	Module Op = 'c'
	// Drop removes the frames whose names match a regular expression
	// (Go syntax, unanchored).
	Drop Op = 'd'
	// Recursion collapses recursion: with a function, the frames from its
	// occurrence nearest the root to the one nearest the leaf become one
	// frame of it; without one, every run of a frame calling itself
	// directly becomes one frame.
	Recursion Op = 'r'
)

// Transform is one step applied to every stack before insertion.
type Transform struct {
	Op  Op
	Arg string // a function name, module name or regular expression; "" for Recursion of all
}

// ParseTransforms parses a tf list: transforms separated by ".", each a
// letter (its Op) followed by its argument in unpadded base64url (RFC 4648
// §5), so the list holds only [A-Za-z0-9_.-] and sits in a URL as it is:
// "fTWFpbg.r" is Focus on "Main" then Recursion. "" is no transform.
func ParseTransforms(s string) ([]Transform, error) {
	if s == "" {
		return nil, nil
	}
	var out []Transform
	for item := range strings.SplitSeq(s, ".") {
		if item == "" {
			return nil, fmt.Errorf("tf: empty transform in %q", s)
		}
		arg, err := base64.RawURLEncoding.DecodeString(item[1:])
		if err != nil {
			return nil, fmt.Errorf("tf: %q: the argument is not unpadded base64url", item)
		}
		t := Transform{Op: Op(item[0]), Arg: string(arg)}
		switch t.Op {
		case Focus, Merge, Module, Drop:
			if t.Arg == "" {
				return nil, fmt.Errorf("tf: %q needs an argument", item)
			}
		case Recursion:
		default:
			return nil, fmt.Errorf("tf: unknown transform %q (f, m, c, d or r)", item[:1])
		}
		if t.Op == Drop {
			if _, err := regexp.Compile(t.Arg); err != nil {
				return nil, fmt.Errorf("tf: %v", err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// FormatTransforms returns the tf list of transforms (see ParseTransforms).
func FormatTransforms(ts []Transform) string {
	var sb strings.Builder
	for i, t := range ts {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteByte(byte(t.Op))
		sb.WriteString(base64.RawURLEncoding.EncodeToString([]byte(t.Arg)))
	}
	return sb.String()
}

// tfState is a transform with what it has learned of the names.
type tfState struct {
	Transform
	fn    int32          // the function's name id (Focus, Merge, Recursion)
	mod   int32          // the module's name id (Module)
	re    *regexp.Regexp // Drop
	match []int8         // by name id: 0 not yet known, 1 matches, -1 does not
}

func (a *Aggregator) newTF(t Transform) (tfState, error) {
	s := tfState{Transform: t, fn: -1, mod: -1}
	switch t.Op {
	case Focus, Merge:
		s.fn = a.name(t.Arg)
	case Recursion:
		if t.Arg != "" {
			s.fn = a.name(t.Arg)
		}
	case Module:
		s.mod = a.name(t.Arg)
	case Drop:
		re, err := regexp.Compile(t.Arg)
		if err != nil {
			return s, fmt.Errorf("tf: %v", err)
		}
		s.re = re
	default:
		return s, fmt.Errorf("tf: unknown transform %q", string(rune(t.Op)))
	}
	return s, nil
}

// matches reports whether name id matches a Module or Drop transform.
func (a *Aggregator) matches(s *tfState, id int32) bool {
	for int(id) >= len(s.match) {
		s.match = append(s.match, 0)
	}
	if m := s.match[id]; m != 0 {
		return m > 0
	}
	name := a.names[id]
	var ok bool
	if s.Op == Module {
		ok = name == s.Arg || strings.HasPrefix(name, s.Arg) && strings.HasPrefix(name[len(s.Arg):], "!")
	} else {
		ok = s.re.MatchString(name)
	}
	s.match[id] = -1
	if ok {
		s.match[id] = 1
	}
	return ok
}

// apply transforms a stack's name ids (leaf first) in place; nil means
// the stack is left out.
func (a *Aggregator) apply(s *tfState, ids []int32) []int32 {
	out := ids[:0]
	switch s.Op {
	case Focus:
		i := lastIndex(ids, s.fn)
		if i < 0 {
			return nil
		}
		return ids[:i+1]
	case Merge:
		for _, id := range ids {
			if id != s.fn {
				out = append(out, id)
			}
		}
	case Drop:
		for _, id := range ids {
			if !a.matches(s, id) {
				out = append(out, id)
			}
		}
	case Module:
		for _, id := range ids {
			if a.matches(s, id) {
				id = s.mod
				if len(out) > 0 && out[len(out)-1] == id {
					continue
				}
			}
			out = append(out, id)
		}
	case Recursion:
		if s.fn < 0 {
			for _, id := range ids {
				if len(out) == 0 || out[len(out)-1] != id {
					out = append(out, id)
				}
			}
			break
		}
		lo, hi := -1, -1 // nearest the leaf, nearest the root
		for i, id := range ids {
			if id == s.fn {
				if lo < 0 {
					lo = i
				}
				hi = i
			}
		}
		if lo < 0 || lo == hi {
			return ids
		}
		out = append(ids[:lo], ids[hi:]...)
	}
	if out == nil {
		out = ids[:0] // an emptied stack is still a stack
	}
	return out
}
