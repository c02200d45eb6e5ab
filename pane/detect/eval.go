package detect

import (
	"fmt"
	"strings"
)

// Input is what a manifest is evaluated against: the bottom screenful as
// text (rows joined by \n), the OSC 0/2 title and the last OSC 9;4
// progress payload (such as "4;3;").
type Input struct {
	Text     string
	Title    string
	Progress string
}

// FallbackIdle is the reason a known agent with no matching rule is idle.
const FallbackIdle = "default_known_agent_idle_fallback"

// FallbackNoAgent is the reason the state is unknown without a manifest.
const FallbackNoAgent = "no_agent"

// Verdict is the outcome of one evaluation.
type Verdict struct {
	State State
	// Rule is the winning rule; nil when a fallback applied.
	Rule *Rule
	// Fallback names the fallback that applied when Rule is nil.
	Fallback string
	// Skip means the winner asks to keep the previous state.
	Skip bool
	// Visible* hold when the winner sets the flag and its state matches.
	VisibleIdle, VisibleBlocker, VisibleWorking bool
}

// RuleResult says how one rule fared.
type RuleResult struct {
	Rule    *Rule
	Matched bool
	// Why explains a rule that did not match (empty when it matched).
	Why string
}

// Explanation is a verdict with every rule's result, in file order.
type Explanation struct {
	Verdict
	Results []RuleResult
}

// Evaluate classifies the input. A nil manifest means no agent is known.
func (m *Manifest) Evaluate(in Input) Verdict {
	return m.evaluate(in, false).Verdict
}

// Explain is Evaluate plus the reason every losing rule did not match.
func (m *Manifest) Explain(in Input) Explanation { return m.evaluate(in, true) }

func (m *Manifest) evaluate(in Input, explain bool) Explanation {
	if m == nil {
		return Explanation{Verdict: Verdict{State: Unknown, Fallback: FallbackNoAgent}}
	}
	ctx := newEvalContext(in)
	var ex Explanation
	var best *Rule
	for i := range m.Rules {
		r := &m.Rules[i]
		reg := ctx.region(r.Region)
		var why *string
		var reason string
		if explain {
			why = &reason
		}
		ok := r.Gate.match(reg, why)
		if ok && (best == nil || r.Priority > best.Priority) {
			best = r
		}
		if explain {
			if !ok && reason == "" {
				reason = "no match"
			}
			if ok {
				reason = ""
			}
			ex.Results = append(ex.Results, RuleResult{Rule: r, Matched: ok, Why: reason})
		}
	}
	if best == nil {
		ex.Verdict = Verdict{State: Idle, Fallback: FallbackIdle}
		return ex
	}
	ex.Verdict = Verdict{
		State:          best.State,
		Rule:           best,
		Skip:           best.SkipStateUpdate,
		VisibleIdle:    best.VisibleIdle && best.State == Idle,
		VisibleBlocker: best.VisibleBlocker && best.State == Blocked,
		VisibleWorking: best.VisibleWorking && best.State == Working,
	}
	return ex
}

// evalContext caches region texts for one evaluation: several rules
// usually share a region.
type evalContext struct {
	in      Input
	layout  *layout
	regions map[Region]*regionText
}

func newEvalContext(in Input) *evalContext {
	return &evalContext{in: in, layout: newLayout(screenLines(in.Text)), regions: map[Region]*regionText{}}
}

// regionText is one region's text, its lower-cased form and its lines,
// each computed on first use.
type regionText struct {
	name  string
	lines []string
	text  string
	low   *string
}

func (c *evalContext) region(r Region) *regionText {
	if rt, ok := c.regions[r]; ok {
		return rt
	}
	rt := &regionText{name: r.String()}
	switch r.Kind {
	case OSCTitle:
		rt.text = c.in.Title
		rt.lines = screenLines(rt.text)
	case OSCProgress:
		rt.text = c.in.Progress
		rt.lines = screenLines(rt.text)
	default:
		rt.lines = c.layout.selectLines(r)
		rt.text = strings.Join(rt.lines, "\n")
	}
	c.regions[r] = rt
	return rt
}

func (rt *regionText) lower() string {
	if rt.low == nil {
		l := lowerRust(rt.text)
		rt.low = &l
	}
	return *rt.low
}

// match applies the gate rules in their documented order: every contains
// needle (case-insensitive), every regex somewhere in the region, every
// line_regex on at least one line, every all gate, at least one any gate
// (when there are any), and no not gate. why, when set, receives the
// first reason for a failed match.
func (g *Gate) match(rt *regionText, why *string) bool {
	fail := func(format string, args ...any) bool {
		if why != nil {
			*why = fmt.Sprintf(format, args...)
		}
		return false
	}
	for i, needle := range g.lower {
		if !strings.Contains(rt.lower(), needle) {
			return fail("contains %s: not in %s%s", tomlQuote(g.Contains[i]), rt.name, emptyNote(rt))
		}
	}
	for _, p := range g.Regex {
		if !p.m.MatchString(rt.text) {
			return fail("regex %s: no match in %s%s", tomlQuote(p.Source), rt.name, emptyNote(rt))
		}
	}
	for _, p := range g.LineRegex {
		if !anyLine(p.m, rt.lines) {
			return fail("line_regex %s: no line of %s matches%s", tomlQuote(p.Source), rt.name, emptyNote(rt))
		}
	}
	for i := range g.All {
		var sub string
		var subWhy *string
		if why != nil {
			subWhy = &sub
		}
		if !g.All[i].match(rt, subWhy) {
			return fail("all[%d]: %s", i, sub)
		}
	}
	if len(g.Any) > 0 {
		matched := false
		for i := range g.Any {
			if g.Any[i].match(rt, nil) {
				matched = true
				break
			}
		}
		if !matched {
			return fail("any: none of its %d gates matches in %s%s", len(g.Any), rt.name, emptyNote(rt))
		}
	}
	for i := range g.Not {
		if g.Not[i].match(rt, nil) {
			return fail("not[%d] matched (%s)", i, g.Not[i].describe())
		}
	}
	return true
}

func anyLine(m matcher, lines []string) bool {
	for _, l := range lines {
		if m.MatchString(l) {
			return true
		}
	}
	return false
}

func emptyNote(rt *regionText) string {
	if rt.text == "" {
		return " (the region is empty)"
	}
	return ""
}

// describe is a short human summary of a gate, for explanations.
func (g *Gate) describe() string {
	var parts []string
	for _, c := range g.Contains {
		parts = append(parts, "contains "+tomlQuote(c))
	}
	for _, p := range g.Regex {
		parts = append(parts, "regex "+tomlQuote(p.Source))
	}
	for _, p := range g.LineRegex {
		parts = append(parts, "line_regex "+tomlQuote(p.Source))
	}
	if n := len(g.All); n > 0 {
		parts = append(parts, fmt.Sprintf("%d all gates", n))
	}
	if n := len(g.Any); n > 0 {
		parts = append(parts, fmt.Sprintf("%d any gates", n))
	}
	if n := len(g.Not); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not gates", n))
	}
	return strings.Join(parts, ", ")
}
