package detect

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/settings"
)

// EngineVersion is the manifest engine version this package implements
// (Herdr 0.8.0's engine, herdr-detection-manifests.md).
const EngineVersion = 3

// Validation limits of the manifest format.
const (
	maxRules          = 128
	maxGateDepth      = 8
	maxGates          = 512
	maxGateMatchers   = 32
	maxTotalMatchers  = 1024
	maxMatcherChars   = 512
	minRegionLines    = 1
	maxRegionLines    = 65535
	topLinesMinEngine = 3
)

// State is what a rule says the agent is doing.
type State string

// The four states a rule may name.
const (
	Idle    State = "idle"
	Working State = "working"
	Blocked State = "blocked"
	Unknown State = "unknown"
)

// Manifest is one agent's detection rules.
type Manifest struct {
	ID               string
	Version          string
	MinEngineVersion *uint32
	UpdatedAt        string
	Aliases          []string
	Rules            []Rule
	// Source names where the manifest came from ("embedded" or a file).
	Source string
}

// Rule is one [[rules]] entry: when its gate matches its region, the agent
// is in State.
type Rule struct {
	ID              string
	State           State
	Priority        int64
	Region          Region
	VisibleIdle     bool
	VisibleBlocker  bool
	VisibleWorking  bool
	SkipStateUpdate bool
	Gate
	// Line is where the rule starts in its file (0 when unknown).
	Line int
}

// Gate is a set of matchers that must all hold (see match).
type Gate struct {
	Contains  []string // as written
	lower     []string // lower-cased once at load
	Regex     []Pattern
	LineRegex []Pattern
	All       []Gate
	Any       []Gate
	Not       []Gate
}

// Pattern is a compiled Rust-syntax regular expression.
type Pattern struct {
	Source string
	m      matcher
}

// Problem is one reason a manifest was rejected.
type Problem struct {
	Line int // 0 when unknown
	Msg  string
}

// ManifestError lists why a manifest file was rejected as a whole.
type ManifestError struct {
	File     string
	Problems []Problem
	err      error // why the file could not be read, if that was it
}

// Unwrap says why the file could not be read (a missing file matches
// fs.ErrNotExist), or nil for a file that was read but does not parse.
func (e *ManifestError) Unwrap() error { return e.err }

func (e *ManifestError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Msg)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, p.Msg)
		}
	}
	return b.String()
}

// Parse reads a manifest. file names it in errors. A manifest with any
// problem is rejected whole, with every problem found (file, line, reason).
func Parse(data []byte, file string) (*Manifest, error) {
	if err := settings.CheckNesting(data, settings.TOML); err != nil {
		return nil, fileError(file, err)
	}
	p := &parser{file: file, loc: newLocator(data)}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &ManifestError{File: file, Problems: []Problem{{Line: settings.TOMLParseLine(data, pe), Msg: settings.TOMLParseMessage(data, pe)}}}
		}
		return nil, &ManifestError{File: file, Problems: []Problem{{Msg: err.Error()}}}
	}
	m := p.manifest(raw)
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
		return nil, &ManifestError{File: file, Problems: p.problems}
	}
	m.Source = file
	return m, nil
}

type parser struct {
	file     string
	loc      *locator
	problems []Problem

	gates, matchers int
}

func (p *parser) add(line int, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

var versionRe = lazyre.New(`^[0-9]+(\.[0-9]+)*$`)

func (p *parser) manifest(raw map[string]any) *Manifest {
	m := &Manifest{}
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		line := p.loc.topKey(k)
		switch k {
		case "id":
			if s, ok := p.str(v, line, "id"); ok {
				if strings.TrimSpace(s) == "" {
					p.add(line, "id must not be blank")
				}
				m.ID = s
			}
		case "version":
			if s, ok := p.str(v, line, "version"); ok {
				if !versionRe().MatchString(s) {
					p.add(line, "version = %q: must be dotted numbers such as \"2026.06.10.1\"", s)
				}
				m.Version = s
			}
		case "min_engine_version":
			n, ok := v.(int64)
			if !ok || n < 0 || n > 1<<32-1 {
				p.add(line, "min_engine_version must be a non-negative integer")
				continue
			}
			u := uint32(n)
			m.MinEngineVersion = &u
			if u > EngineVersion {
				p.add(line, "min_engine_version = %d: this manifest needs a newer detection engine (herdr-pi implements %d)", u, EngineVersion)
			}
		case "updated_at":
			if s, ok := p.str(v, line, "updated_at"); ok {
				m.UpdatedAt = s
			}
		case "aliases":
			m.Aliases = p.strList(v, line, "aliases")
		case "rules":
			tables, ok := tableList(v)
			if !ok {
				p.add(line, "rules must be a list of [[rules]] tables")
				continue
			}
			for i, t := range tables {
				m.Rules = append(m.Rules, p.rule(i, t, m))
			}
		default:
			p.add(line, "unknown field %q at the top level", k)
		}
	}
	if _, ok := raw["id"]; !ok {
		p.add(1, "missing field \"id\"")
	}
	switch n := len(m.Rules); {
	case n == 0:
		p.add(1, "a manifest needs at least one [[rules]] entry")
	case n > maxRules:
		p.add(p.loc.rule(maxRules), "%d rules: at most %d are allowed", n, maxRules)
	}
	if p.gates > maxGates {
		p.add(0, "%d gates in total: at most %d are allowed", p.gates, maxGates)
	}
	if p.matchers > maxTotalMatchers {
		p.add(0, "%d matchers in total: at most %d are allowed", p.matchers, maxTotalMatchers)
	}
	return m
}

func (p *parser) rule(i int, t map[string]any, m *Manifest) Rule {
	r := Rule{Line: p.loc.rule(i), Region: Region{Kind: WholeRecent}}
	where := func(key string) int { return p.loc.ruleKey(i, key) }
	name := fmt.Sprintf("rule %d", i+1)
	if id, ok := t["id"].(string); ok && strings.TrimSpace(id) != "" {
		name = fmt.Sprintf("rule %q", id)
	}
	gateRaw := map[string]any{}
	for _, k := range sortedKeys(t) {
		v := t[k]
		line := where(k)
		switch k {
		case "id":
			if s, ok := p.str(v, line, name+": id"); ok {
				if strings.TrimSpace(s) == "" {
					p.add(line, "%s: id must not be blank", name)
				}
				r.ID = s
			}
		case "state":
			if s, ok := p.str(v, line, name+": state"); ok {
				switch State(s) {
				case Idle, Working, Blocked, Unknown:
					r.State = State(s)
				default:
					p.add(line, "%s: state = %q: must be idle, working, blocked or unknown", name, s)
				}
			}
		case "priority":
			n, ok := v.(int64)
			if !ok || n < -1<<31 || n > 1<<31-1 {
				p.add(line, "%s: priority must be a 32-bit integer", name)
				continue
			}
			r.Priority = n
		case "region":
			if s, ok := p.str(v, line, name+": region"); ok {
				reg, err := ParseRegion(s)
				if err != nil {
					p.add(line, "%s: %v", name, err)
				} else if reg.Kind == TopNonEmptyLines && m.MinEngineVersion != nil && *m.MinEngineVersion < topLinesMinEngine {
					p.add(line, "%s: region %s needs min_engine_version %d or later (the manifest says %d)", name, s, topLinesMinEngine, *m.MinEngineVersion)
				}
				r.Region = reg
			}
		case "visible_idle", "visible_blocker", "visible_working", "skip_state_update":
			b, ok := v.(bool)
			if !ok {
				p.add(line, "%s: %s must be true or false", name, k)
				continue
			}
			switch k {
			case "visible_idle":
				r.VisibleIdle = b
			case "visible_blocker":
				r.VisibleBlocker = b
			case "visible_working":
				r.VisibleWorking = b
			default:
				r.SkipStateUpdate = b
			}
		case "contains", "regex", "line_regex", "all", "any", "not":
			gateRaw[k] = v
		default:
			p.add(line, "%s: unknown field %q", name, k)
		}
	}
	if _, ok := t["id"]; !ok {
		p.add(r.Line, "%s: missing field \"id\"", name)
	}
	if _, ok := t["state"]; !ok {
		p.add(r.Line, "%s: missing field \"state\"", name)
	}
	if r.SkipStateUpdate && (r.State != Unknown || r.VisibleIdle || r.VisibleBlocker || r.VisibleWorking) {
		p.add(where("skip_state_update"), "%s: skip_state_update = true needs state = \"unknown\" and no visible_* flag", name)
	}
	r.Gate = p.gate(gateRaw, i, name, 0, gateRule)
	return r
}

type gateKind int

const (
	gateRule gateKind = iota
	gateAll
	gateAny
	gateNot
)

// gate decodes the matcher keys of a rule or a nested gate. depth 0 is the
// rule itself; nested gates may go maxGateDepth deep.
func (p *parser) gate(raw map[string]any, rule int, name string, depth int, kind gateKind) Gate {
	var g Gate
	direct := 0
	line := func(key string) int { return p.loc.ruleKey(rule, key) }
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		switch k {
		case "contains":
			g.Contains = p.matcherList(v, line(k), name, k)
			for _, s := range g.Contains {
				g.lower = append(g.lower, lowerRust(s))
			}
			direct += len(g.Contains)
		case "regex", "line_regex":
			for _, src := range p.matcherList(v, line(k), name, k) {
				direct++
				m, err := compileRust(src)
				if err != nil {
					p.add(p.loc.ruleText(rule, src, line(k)), "%s: %s %s does not compile: %v", name, k, tomlQuote(src), err)
					continue
				}
				if k == "regex" {
					g.Regex = append(g.Regex, Pattern{Source: src, m: m})
				} else {
					g.LineRegex = append(g.LineRegex, Pattern{Source: src, m: m})
				}
			}
		case "all", "any", "not":
			list, ok := tableList(v)
			if !ok {
				p.add(line(k), "%s: %s must be a list of gates ({ contains = [...] , ... })", name, k)
				continue
			}
			sub := map[string]gateKind{"all": gateAll, "any": gateAny, "not": gateNot}[k]
			for _, gr := range list {
				p.gates++
				if depth+1 > maxGateDepth {
					p.add(line(k), "%s: gates nest deeper than %d levels", name, maxGateDepth)
					return g
				}
				for _, gk := range sortedKeys(gr) {
					if !slices.Contains([]string{"contains", "regex", "line_regex", "all", "any", "not"}, gk) {
						p.add(p.loc.ruleInlineKey(rule, gk, line(k)), "%s: unknown field %q in a gate", name, gk)
					}
				}
				child := p.gate(gr, rule, name, depth+1, sub)
				switch k {
				case "all":
					g.All = append(g.All, child)
				case "any":
					g.Any = append(g.Any, child)
				default:
					g.Not = append(g.Not, child)
				}
			}
		}
	}
	p.matchers += direct
	if direct > maxGateMatchers {
		p.add(line("contains"), "%s: %d matchers in one gate: at most %d are allowed", name, direct, maxGateMatchers)
	}
	positive := len(g.Contains)+len(g.Regex)+len(g.LineRegex)+len(g.All)+len(g.Any) > 0 ||
		hasList(raw, "contains") || hasList(raw, "regex") || hasList(raw, "line_regex")
	switch kind {
	case gateNot:
		if !positive && len(g.Not) == 0 {
			p.add(line("not"), "%s: a not gate needs at least one matcher", name)
		}
	default:
		if !positive {
			what := map[gateKind]string{gateRule: "the rule", gateAll: "an all gate", gateAny: "an any gate"}[kind]
			p.add(p.loc.rule(rule), "%s: %s needs a positive matcher (contains, regex, line_regex, all or any)", name, what)
		}
	}
	return g
}

// tableList accepts both shapes the decoder produces for a list of tables:
// [[array.of.tables]] and inline [{...}, {...}].
func tableList(v any) ([]map[string]any, bool) {
	switch l := v.(type) {
	case []map[string]any:
		return l, true
	case []any:
		out := make([]map[string]any, 0, len(l))
		for _, e := range l {
			t, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out = append(out, t)
		}
		return out, true
	}
	return nil, false
}

func hasList(raw map[string]any, key string) bool {
	l, ok := raw[key].([]any)
	return ok && len(l) > 0
}

func (p *parser) str(v any, line int, what string) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.add(line, "%s must be a string", what)
	}
	return s, ok
}

func (p *parser) strList(v any, line int, what string) []string {
	arr, ok := v.([]any)
	if !ok {
		p.add(line, "%s must be a list of strings", what)
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			p.add(line, "%s must be a list of strings", what)
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) matcherList(v any, line int, name, key string) []string {
	list := p.strList(v, line, name+": "+key)
	for _, s := range list {
		if n := utf8.RuneCountInString(s); n > maxMatcherChars {
			p.add(line, "%s: a %s entry has %d characters: at most %d are allowed", name, key, n, maxMatcherChars)
		}
	}
	return list
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// locator finds the lines of rules and keys in manifest text. The TOML
// decoder keeps positions to itself; rule headers and key assignments are
// simple enough to find again in a file that parsed.
type locator struct {
	lines   []string
	headers []int // 0-based line index of each [[rules]] header
}

var rulesHeaderRe = lazyre.New(`^\s*\[\[\s*rules\s*\]\]`)

func newLocator(data []byte) *locator {
	l := &locator{lines: strings.Split(string(data), "\n")}
	for i, line := range l.lines {
		if rulesHeaderRe().MatchString(line) {
			l.headers = append(l.headers, i)
		}
	}
	return l
}

// assignsKey says whether line assigns key: `^\s*"?KEY"?\s*=` as a plain
// scan. It was that expression, compiled for every key of every rule at
// every parse, a third of what choosing the manifest cost at each start of
// wrap.
func assignsKey(line, key string) bool {
	// Any amount of the leading space may come before the key (a quoted
	// key may begin with a space), and its quote is optional.
	for i := 0; ; i++ {
		if rest := line[i:]; keyThenEquals(rest, key) || (strings.HasPrefix(rest, `"`) && keyThenEquals(rest[1:], key)) {
			return true
		}
		if i == len(line) || !isSpace(line[i]) {
			return false
		}
	}
}

// keyThenEquals says whether s is key, an optional quote, space and '='.
func keyThenEquals(s, key string) bool {
	rest, ok := strings.CutPrefix(s, key)
	if !ok {
		return false
	}
	return equalsNext(rest) || (strings.HasPrefix(rest, `"`) && equalsNext(rest[1:]))
}

func equalsNext(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, spaces), "=")
}

// spaces are what \s matches in Go's regular expressions.
const spaces = "\t\n\f\r "

func isSpace(b byte) bool { return strings.IndexByte(spaces, b) >= 0 }

func (l *locator) topKey(key string) int {
	end := len(l.lines)
	if len(l.headers) > 0 {
		end = l.headers[0]
	}
	if key == "rules" && len(l.headers) > 0 {
		return l.headers[0] + 1
	}
	for i := 0; i < end; i++ {
		if assignsKey(l.lines[i], key) {
			return i + 1
		}
	}
	return 0
}

func (l *locator) span(rule int) (int, int) {
	if rule >= len(l.headers) {
		return 0, 0
	}
	end := len(l.lines)
	if rule+1 < len(l.headers) {
		end = l.headers[rule+1]
	}
	return l.headers[rule], end
}

func (l *locator) rule(rule int) int {
	if rule < len(l.headers) {
		return l.headers[rule] + 1
	}
	return 0
}

func (l *locator) ruleKey(rule int, key string) int {
	start, end := l.span(rule)
	for i := start; i < end; i++ {
		if assignsKey(l.lines[i], key) {
			return i + 1
		}
	}
	return l.rule(rule)
}

// ruleInlineKey finds the line of a rule that assigns key inside an
// inline table, else fallback.
func (l *locator) ruleInlineKey(rule int, key string, fallback int) int {
	start, end := l.span(rule)
	re := regexp.MustCompile(`(^|[{,\s])"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	for i := start; i < end; i++ {
		if re.MatchString(l.lines[i]) {
			return i + 1
		}
	}
	return fallback
}

// ruleText finds the line of a rule that contains text as written
// (a pattern or key inside an inline table), else fallback.
func (l *locator) ruleText(rule int, text string, fallback int) int {
	start, end := l.span(rule)
	variants := []string{text, strconv.Quote(text), strings.ReplaceAll(text, `\`, `\\`)}
	for i := start; i < end; i++ {
		for _, v := range variants {
			if v != "" && strings.Contains(l.lines[i], v) {
				return i + 1
			}
		}
	}
	return fallback
}
