package detect

import (
	"fmt"
	"strconv"
	"strings"
)

// RegionKind names the part of the input a rule looks at.
type RegionKind int

// Every region of the manifest format (herdr-detection-manifests.md,
// "Regions").
const (
	WholeRecent RegionKind = iota
	BottomLines
	BottomNonEmptyLines
	TopNonEmptyLines
	AfterLastHorizontalRule
	PromptBoxBody
	AbovePromptBox
	LastNonEmptyAbovePromptBox
	AfterLastPromptMarker
	BeforeCurrentPromptMarker
	WholeRecentWithoutCurrentPromptMarker
	CurrentPromptBlockMarker
	AfterCurrentPromptBlockMarker
	OSCTitle
	OSCProgress
)

var regionNames = map[RegionKind]string{
	WholeRecent:                           "whole_recent",
	BottomLines:                           "bottom_lines",
	BottomNonEmptyLines:                   "bottom_non_empty_lines",
	TopNonEmptyLines:                      "top_non_empty_lines",
	AfterLastHorizontalRule:               "after_last_horizontal_rule",
	PromptBoxBody:                         "prompt_box_body",
	AbovePromptBox:                        "above_prompt_box",
	LastNonEmptyAbovePromptBox:            "last_non_empty_above_prompt_box",
	AfterLastPromptMarker:                 "after_last_prompt_marker",
	BeforeCurrentPromptMarker:             "before_current_prompt_marker",
	WholeRecentWithoutCurrentPromptMarker: "whole_recent_without_current_prompt_marker",
	CurrentPromptBlockMarker:              "current_prompt_block_marker",
	AfterCurrentPromptBlockMarker:         "after_current_prompt_block_marker",
	OSCTitle:                              "osc_title",
	OSCProgress:                           "osc_progress",
}

// Region is a region name with its line count where it takes one.
type Region struct {
	Kind RegionKind
	N    int
}

func (r Region) String() string {
	name := regionNames[r.Kind]
	switch r.Kind {
	case BottomLines, BottomNonEmptyLines, TopNonEmptyLines:
		return fmt.Sprintf("%s(%d)", name, r.N)
	}
	return name
}

// ParseRegion reads a region name such as "bottom_non_empty_lines(5)".
// Counts are 1 to 65535 written without a leading zero.
func ParseRegion(s string) (Region, error) {
	for kind, name := range regionNames {
		switch kind {
		case BottomLines, BottomNonEmptyLines, TopNonEmptyLines:
			arg, ok := strings.CutPrefix(s, name+"(")
			if !ok {
				continue
			}
			arg, ok = strings.CutSuffix(arg, ")")
			n, err := strconv.Atoi(arg)
			if !ok || err != nil || !allDigits(arg) || arg[0] == '0' || n < minRegionLines || n > maxRegionLines {
				return Region{}, fmt.Errorf("region %q: the count must be 1 to %d without a leading zero", s, maxRegionLines)
			}
			return Region{Kind: kind, N: n}, nil
		default:
			if s == name {
				return Region{Kind: kind}, nil
			}
		}
	}
	return Region{}, fmt.Errorf("unknown region %q; the regions are %s", s, regionList())
}

// regionList names every region in the manifest format's order, a count
// written N: a name alone does not say what the right one is.
func regionList() string {
	names := make([]string, 0, len(regionNames))
	for kind := WholeRecent; kind <= OSCProgress; kind++ {
		name := regionNames[kind]
		switch kind {
		case BottomLines, BottomNonEmptyLines, TopNonEmptyLines:
			name += "(N)"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// screenLines splits screen text into lines: on \n, each trailing \r
// removed.
func screenLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func blank(line string) bool { return strings.TrimSpace(line) == "" }

// isHorizontalRule: after trimming, a run of one or more U+2500 followed
// by nothing but whitespace, or a run of at least three followed by
// anything ("──── (bypass permissions on) ─" is a rule, "─ x" is not).
func isHorizontalRule(line string) bool {
	t := strings.TrimSpace(line)
	run := 0
	rest := t
	for strings.HasPrefix(rest, "─") {
		run++
		rest = rest[len("─"):]
	}
	if run == 0 {
		return false
	}
	return strings.TrimSpace(rest) == "" || run >= 3
}

func isPromptLine(line string) bool { return line == "›" || strings.HasPrefix(line, "› ") }

func isBlockMarkerLine(line string) bool {
	for _, m := range []string{"•", "■", "✗", "✓"} {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}

// layout is what the prompt-aware regions need to know about a screen,
// computed once per evaluation.
type layout struct {
	lines         []string
	rules         []int // indexes of horizontal-rule lines
	currentPrompt int   // index of the current prompt line, -1 when none
}

func newLayout(lines []string) *layout {
	l := &layout{lines: lines, currentPrompt: -1}
	lastPrompt, lastBlock := -1, -1
	for i, line := range lines {
		if isHorizontalRule(line) {
			l.rules = append(l.rules, i)
		}
		if isPromptLine(line) {
			lastPrompt = i
		}
		if isBlockMarkerLine(line) {
			lastBlock = i
		}
	}
	if lastPrompt >= 0 && lastBlock < lastPrompt {
		l.currentPrompt = lastPrompt
	}
	return l
}

// boxTop is the index of the prompt box's top border, -1 without a box.
func (l *layout) boxTop() int {
	if len(l.rules) < 2 {
		return -1
	}
	return l.rules[len(l.rules)-2]
}

// currentBlockMarker is the last block-marker line before the current
// prompt line, -1 when there is none (or no current prompt line).
func (l *layout) currentBlockMarker() int {
	for i := l.currentPrompt - 1; i >= 0; i-- {
		if isBlockMarkerLine(l.lines[i]) {
			return i
		}
	}
	return -1
}

// selectLines returns the lines of a screen region.
func (l *layout) selectLines(r Region) []string {
	lines := l.lines
	switch r.Kind {
	case WholeRecent:
		return lines
	case BottomLines:
		return lines[max(0, len(lines)-r.N):]
	case BottomNonEmptyLines:
		start, seen := -1, 0
		for i := len(lines) - 1; i >= 0 && seen < r.N; i-- {
			if !blank(lines[i]) {
				start, seen = i, seen+1
			}
		}
		if start < 0 {
			return nil
		}
		return lines[start:]
	case TopNonEmptyLines:
		end, seen := -1, 0
		for i := 0; i < len(lines) && seen < r.N; i++ {
			if !blank(lines[i]) {
				end, seen = i, seen+1
			}
		}
		return lines[:end+1]
	case AfterLastHorizontalRule:
		if len(l.rules) == 0 {
			return lines
		}
		return lines[l.rules[len(l.rules)-1]+1:]
	case PromptBoxBody:
		top := l.boxTop()
		if top < 0 {
			return nil
		}
		return lines[top+1 : l.rules[len(l.rules)-1]]
	case AbovePromptBox:
		if top := l.boxTop(); top >= 0 {
			return lines[:top]
		}
		return lines
	case LastNonEmptyAbovePromptBox:
		above := l.selectLines(Region{Kind: AbovePromptBox})
		for i := len(above) - 1; i >= 0; i-- {
			if !blank(above[i]) {
				return above[i : i+1]
			}
		}
		return nil
	case AfterLastPromptMarker:
		for i := len(lines) - 1; i >= 0; i-- {
			if isPromptLine(lines[i]) {
				return lines[i+1:]
			}
		}
		return lines
	case BeforeCurrentPromptMarker:
		if l.currentPrompt >= 0 {
			return lines[:l.currentPrompt]
		}
		return lines
	case WholeRecentWithoutCurrentPromptMarker:
		if l.currentPrompt >= 0 {
			return nil
		}
		return lines
	case CurrentPromptBlockMarker:
		if i := l.currentBlockMarker(); i >= 0 {
			return lines[i : i+1]
		}
		return nil
	case AfterCurrentPromptBlockMarker:
		if i := l.currentBlockMarker(); i >= 0 {
			return lines[i:]
		}
		return nil
	}
	return nil
}
