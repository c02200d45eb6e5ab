package detect

import (
	"regexp/syntax"
	"unicode/utf8"
)

// wordVM runs a compiled Go regexp program with Rust's Unicode word
// boundaries: Go evaluates \b and \B against ASCII word characters only, so
// patterns that use them cannot go through package regexp without changing
// meaning. It is a plain Pike VM (linear in text × program), which is
// plenty for screen-sized texts.
type wordVM struct {
	prog *syntax.Prog
}

func newWordVM(prog *syntax.Prog) *wordVM { return &wordVM{prog: prog} }

// sparseSet is a set of program counters with O(1) insert, test and clear.
type sparseSet struct {
	dense  []uint32
	sparse []uint32
}

func newSparseSet(n int) sparseSet {
	return sparseSet{dense: make([]uint32, 0, n), sparse: make([]uint32, n)}
}

func (s *sparseSet) has(pc uint32) bool {
	i := s.sparse[pc]
	return int(i) < len(s.dense) && s.dense[i] == pc
}

func (s *sparseSet) add(pc uint32) {
	s.sparse[pc] = uint32(len(s.dense))
	s.dense = append(s.dense, pc)
}

func (s *sparseSet) clear() { s.dense = s.dense[:0] }

// emptyFlags are the zero-width conditions that hold between before and
// after (-1 at the text's ends), with a Unicode word test.
func emptyFlags(before, after rune) syntax.EmptyOp {
	var op syntax.EmptyOp
	if before < 0 {
		op |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	}
	if before == '\n' {
		op |= syntax.EmptyBeginLine
	}
	if after < 0 {
		op |= syntax.EmptyEndText | syntax.EmptyEndLine
	}
	if after == '\n' {
		op |= syntax.EmptyEndLine
	}
	if isWordRune(before) != isWordRune(after) {
		op |= syntax.EmptyWordBoundary
	} else {
		op |= syntax.EmptyNoWordBoundary
	}
	return op
}

// MatchString reports whether the program matches anywhere in s.
func (v *wordVM) MatchString(s string) bool {
	n := len(v.prog.Inst)
	visited := newSparseSet(n) // closure bookkeeping at the current position
	queued := newSparseSet(n)  // threads waiting to resume at the next position
	var run, next []uint32
	stack := make([]uint32, 0, 16)
	var pending []uint32

	// expand follows the zero-width part of the program from pc; it adds the
	// rune-consuming instructions it reaches to run and reports a match.
	expand := func(pc uint32, flags syntax.EmptyOp) bool {
		stack = append(stack[:0], pc)
		for len(stack) > 0 {
			pc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if visited.has(pc) {
				continue
			}
			visited.add(pc)
			inst := &v.prog.Inst[pc]
			switch inst.Op {
			case syntax.InstMatch:
				return true
			case syntax.InstFail:
			case syntax.InstAlt, syntax.InstAltMatch:
				stack = append(stack, inst.Arg, inst.Out)
			case syntax.InstCapture, syntax.InstNop:
				stack = append(stack, inst.Out)
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(inst.Arg)&^flags == 0 {
					stack = append(stack, inst.Out)
				}
			default:
				run = append(run, pc)
			}
		}
		return false
	}

	before := rune(-1)
	for pos := 0; ; {
		after, w := rune(-1), 0
		if pos < len(s) {
			after, w = utf8.DecodeRuneInString(s[pos:])
		}
		flags := emptyFlags(before, after)
		visited.clear()
		run = run[:0]
		for _, pc := range pending {
			if expand(pc, flags) {
				return true
			}
		}
		// Unanchored search: a new thread may start at every position.
		if expand(uint32(v.prog.Start), flags) {
			return true
		}
		if after < 0 {
			return false
		}
		next = next[:0]
		queued.clear()
		for _, pc := range run {
			inst := &v.prog.Inst[pc]
			ok := false
			switch inst.Op {
			case syntax.InstRuneAny:
				ok = true
			case syntax.InstRuneAnyNotNL:
				ok = after != '\n'
			case syntax.InstRune, syntax.InstRune1:
				ok = inst.MatchRune(after)
			}
			if ok && !queued.has(inst.Out) {
				queued.add(inst.Out)
				next = append(next, inst.Out)
			}
		}
		pending, next = next, pending
		before = after
		pos += w
	}
}
