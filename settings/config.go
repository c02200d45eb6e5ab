package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/internal/redact"
)

// Config is herdr-pi's config.toml. Every key is documented in
// docs/configuration.md; the zero file means [Defaults].
type Config struct {
	Herdr  HerdrConfig  `toml:"herdr"`
	Detect DetectConfig `toml:"detect"`
	Notify NotifyConfig `toml:"notify"`
	Open   OpenConfig   `toml:"open"`
	Log    LogConfig    `toml:"log"`
}

// OpenConfig is how `herdr-pi open` starts Pi in a pane.
type OpenConfig struct {
	// Pi is the Pi command: a program name or path, or a list of words
	// (["node", "/opt/pi/dist/cli.js"]). Default "pi" from PATH.
	Pi Command `toml:"pi"`
}

// Command is a program and its leading arguments: a TOML string (one word,
// never split) or array of strings.
type Command []string

// UnmarshalTOML takes a string or an array of strings.
func (c *Command) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*c = Command{v}
		return nil
	case []any:
		out := make(Command, 0, len(v))
		for _, w := range v {
			s, ok := w.(string)
			if !ok {
				return fmt.Errorf("must be a string or a list of strings, not a list holding %T", w)
			}
			out = append(out, s)
		}
		*c = out
		return nil
	}
	return fmt.Errorf("must be a string or a list of strings, not %T", v)
}

// HerdrConfig is how herdr-pi names itself to Herdr.
type HerdrConfig struct {
	// Source is the reporting source; custom sources take the pane's single
	// hook-authority slot.
	Source string `toml:"source"`
	// Agent is the agent label reported for the pane; empty means the
	// agent detection reads the screen as.
	Agent string `toml:"agent"`
}

// DetectConfig tunes screen detection and the state machine.
type DetectConfig struct {
	// Agent picks the detection manifest; empty means "from the command".
	Agent string `toml:"agent"`
	// Debounce is how long a state must hold before it is reported.
	Debounce Duration `toml:"debounce"`
	// StartupGrace is how long after start the agent counts as idle
	// whatever the screen shows.
	StartupGrace Duration `toml:"startup_grace"`
}

// NotifyConfig chooses how notifications reach the person.
type NotifyConfig struct {
	Enabled *bool `toml:"enabled"`
	// Channel is auto (Herdr inside Herdr, else the terminal), herdr,
	// terminal or off.
	Channel string `toml:"channel"`
	// Sound is the Herdr toast sound: none, done or request.
	Sound string `toml:"sound"`
	// FinishedAfter: a run shorter than this ends without a "finished"
	// notification; 0 tells every run.
	FinishedAfter Duration `toml:"finished_after"`
	// Fallback is the OSC protocol for an unknown TERM_PROGRAM. Empty (the
	// default) leaves it to the seed extension's config.json, else osc99.
	Fallback string `toml:"fallback"`
	// TermPrograms maps TERM_PROGRAM values to OSC protocols.
	TermPrograms map[string]string `toml:"term_programs"`
	Ntfy         NtfyConfig        `toml:"ntfy"`
}

// NtfyConfig is the optional ntfy push channel.
type NtfyConfig struct {
	Enabled  bool     `toml:"enabled"`
	Server   string   `toml:"server"`
	Topic    string   `toml:"topic"`
	Token    string   `toml:"token"`
	Priority int      `toml:"priority"`
	Timeout  Duration `toml:"timeout"`
}

// LogConfig controls the log file.
type LogConfig struct {
	// Level is info or debug, in lower case whatever case the file used
	// (HERDR_PI_LOG overrides).
	Level string `toml:"level"`
}

// NotifyEnabled reports whether notifications are on (the default).
func (c Config) NotifyEnabled() bool { return c.Notify.Enabled == nil || *c.Notify.Enabled }

// Defaults is the configuration used when there is no file, or a bad one.
func Defaults() Config {
	return Config{
		Herdr:  HerdrConfig{Source: "custom:herdr-pi"},
		Detect: DetectConfig{Debounce: Duration(300 * time.Millisecond), StartupGrace: Duration(time.Second)},
		Notify: NotifyConfig{
			Channel: "auto", Sound: "none", FinishedAfter: Duration(20 * time.Second),
			Ntfy: NtfyConfig{Server: "https://ntfy.sh", Priority: 3, Timeout: Duration(5 * time.Second)},
		},
		Open: OpenConfig{Pi: Command{"pi"}},
		Log:  LogConfig{Level: "info"},
	}
}

// Duration is a TOML string such as "300ms" or "2s".
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		if _, numErr := strconv.ParseFloat(string(b), 64); numErr == nil {
			return fmt.Errorf("%q has no unit (write it like \"%ss\" or \"300ms\")", b, b)
		}
		return fmt.Errorf("%q is not a duration (write it like \"300ms\" or \"2s\")", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration back in Go syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Problem is one thing wrong in a config file, located by line.
type Problem struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
	// Err is why the file as a whole was not read (permission denied, a
	// FIFO, too large), for errors.Is on the [ConfigError]; nil for a
	// problem on a line.
	Err error
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// fileProblem turns an error of [ReadFile] or [CheckNesting] into a
// Problem of the file shown; then is appended to its message (what herdr-pi
// does instead).
func fileProblem(err error, shown, then string) Problem {
	p := Problem{File: shown, Msg: err.Error(), Err: err}
	var fe *FileError
	if errors.As(err, &fe) {
		p.Line, p.Msg = fe.Line, fe.Reason
	}
	p.Msg += then
	return p
}

// ConfigError lists every problem found in a config file.
type ConfigError struct {
	Problems []Problem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the errors behind problems with the file as a whole, so
// callers can tell, say, a file they may not read (fs.ErrPermission) from
// one with mistakes in it.
func (e *ConfigError) Unwrap() []error {
	var errs []error
	for _, p := range e.Problems {
		if p.Err != nil {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

// LoadConfig reads the config file at path. A missing file is not an error.
// On any problem it returns [Defaults] together with a *ConfigError naming
// file, line and key of every problem, so callers can report it and carry
// on; shown is the path as it should appear in messages.
func LoadConfig(path, shown string) (Config, error) { return loadConfig(path, shown, "", "") }

// loadConfig is [LoadConfig]; missing, when not empty, is the problem a
// missing file is instead of "all defaults", and notFile the way out of a
// path that is not a regular file when the person named it
// ([ReadNamedFile]).
func loadConfig(path, shown, missing, notFile string) (Config, error) {
	data, err := readFile(path, TOML, notFile, true)
	if errors.Is(err, fs.ErrNotExist) {
		if missing == "" {
			return Defaults(), nil
		}
		return Defaults(), &ConfigError{Problems: []Problem{{File: shown, Err: err, Msg: missing}}}
	}
	if err != nil {
		return Defaults(), &ConfigError{Problems: []Problem{fileProblem(err, shown, "")}}
	}
	cfg, problems := ParseConfig(data, shown)
	if len(problems) > 0 {
		return Defaults(), &ConfigError{Problems: problems}
	}
	return cfg, nil
}

// LoadConfig reads herdr-pi's config file as [LoadConfig] does, except
// that a file HERDR_PI_CONFIG names must exist: a typo in the variable
// would otherwise drop every setting without a word.
func (p Paths) LoadConfig() (Config, error) {
	missing, notFile := "", ""
	if p.ConfigNamed {
		unset := p.Pretty(filepath.Join(p.ConfigDir, "config.toml"))
		missing = fmt.Sprintf("does not exist, and HERDR_PI_CONFIG names it: create it, or point HERDR_PI_CONFIG at your config file (unset, herdr-pi reads %s)", unset)
		// A directory or a pipe there is the person's own: never to be
		// removed for herdr-pi's sake.
		notFile = fmt.Sprintf("point HERDR_PI_CONFIG at your config file (unset, herdr-pi reads %s)", unset)
	}
	return loadConfig(p.ConfigFile, p.Pretty(p.ConfigFile), missing, notFile)
}

// ParseConfig decodes and validates config text over the defaults. Every
// problem is reported, not the first: after a syntax error nothing more can
// be read, but a value of the wrong type only costs its own key (which
// keeps its default while the others are checked).
func ParseConfig(data []byte, shown string) (Config, []Problem) {
	if err := CheckNesting(data, TOML); err != nil {
		return Defaults(), []Problem{fileProblem(err, shown, "")}
	}
	var top map[string]toml.Primitive
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := TOMLParseMessage(data, pe)
			line := TOMLParseLine(data, pe)
			// The parser's last key is the last one it read, often a
			// table above the mistake ("debounce "3s"" under [detect]
			// has "detect"): named only when it is on the mistake's line.
			key := pe.LastKey
			switch {
			case duplicateKeyRe().MatchString(pe.Message):
				// The message names the key and both its lines.
			case key != "" && locateKey(data, splitDotted(key)) != line:
				key = ""
			case key != "":
				msg = fmt.Sprintf("key %s: %s", shownKey(key), msg)
			}
			return Defaults(), []Problem{{File: shown, Line: line, Key: key, Msg: msg}}
		}
		return Defaults(), []Problem{{File: shown, Line: lineFromTOMLError(err), Msg: parserWords(strings.TrimPrefix(err.Error(), "toml: "))}}
	}
	cfg := Defaults()
	d := configDecoder{md: md, data: data, shown: shown}
	d.table(top, reflect.ValueOf(&cfg).Elem(), nil)
	// The level's words take any case, as HERDR_PI_LOG's do; the rest of
	// the program sees them in lower case.
	if level := strings.ToLower(cfg.Log.Level); level == "info" || level == "debug" {
		cfg.Log.Level = level
	}
	problems := d.problems
	for _, v := range cfg.validate(d.written) {
		problems = append(problems, Problem{File: shown, Line: locateKey(data, v.key), Key: strings.Join(v.key, "."), Msg: v.msg})
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return cfg, problems
}

// configDecoder decodes a parsed file into [Config] one key at a time,
// collecting a problem for each key it cannot take.
type configDecoder struct {
	md       toml.MetaData
	data     []byte
	shown    string
	problems []Problem
	// written is each duration as the file spells it, by dotted key: a
	// value out of range is quoted that way ("60m", not "1h0m0s").
	written map[string]string
}

func (d *configDecoder) add(key []string, msg string) {
	d.problems = append(d.problems, Problem{File: d.shown, Line: locateKey(d.data, key), Key: toml.Key(key).String(), Msg: msg})
}

// table decodes the keys of one TOML table into the struct dst, whose
// fields name their keys in `toml` tags. An unknown table is reported
// once, not once per key inside it.
func (d *configDecoder) table(t map[string]toml.Primitive, dst reflect.Value, path []string) {
	for _, name := range slices.Sorted(maps.Keys(t)) {
		key := append(slices.Clip(path), name)
		field, ok := fieldFor(dst, name)
		if !ok {
			msg := unknownKeyMsg(key)
			meant := Meant(name, fieldNames(dst))
			if meant != "" {
				msg += fmt.Sprintf("; did you mean %q?", meant)
			}
			if d.kind(t[name]) == kindTable {
				msg = fmt.Sprintf("unknown table [%s]", parserWords(toml.Key(key).String()))
				if meant != "" {
					msg += fmt.Sprintf("; did you mean [%s]?", toml.Key(append(slices.Clip(path), meant)).String())
				}
			}
			d.add(key, msg)
			continue
		}
		d.value(t[name], field, key)
	}
}

// kindTable is what [configDecoder.kind] says of a table.
const kindTable = "a table"

// kind names the TOML type of a value for people ("a string", "a
// table"). It looks at the decoded value, not at toml.MetaData.Type: that
// has no type for a table made implicitly by a dotted key (sound.x = 1
// makes sound one), and an empty key ("" = 1) overwrites the type of the
// table holding it (BurntSushi/toml 1.6).
func (d *configDecoder) kind(p toml.Primitive) string {
	var v any
	if d.md.PrimitiveDecode(p, &v) != nil {
		return "a value of another type"
	}
	return TOMLKind(v)
}

// TOMLKind names the TOML type of a decoded value for people ("a
// string", "a table").
func TOMLKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "a number"
	case float64:
		return "a decimal number"
	case bool:
		return "true or false"
	case time.Time:
		return "a date or time"
	case map[string]any:
		return kindTable
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// value decodes one key into dst, which is left as it was when the value
// does not fit.
func (d *configDecoder) value(p toml.Primitive, dst reflect.Value, key []string) {
	switch dst.Kind() {
	case reflect.Struct:
		t, ok := d.subTable(p, key)
		if !ok {
			return
		}
		d.table(t, dst, key)
	case reflect.Map:
		// A free-form table (term_programs): each entry is its own key.
		t, ok := d.subTable(p, key)
		if !ok {
			return
		}
		m := reflect.MakeMapWithSize(dst.Type(), len(t))
		for _, name := range slices.Sorted(maps.Keys(t)) {
			v := reflect.New(dst.Type().Elem())
			if d.decode(t[name], v, append(slices.Clip(key), name)) {
				m.SetMapIndex(reflect.ValueOf(name), v.Elem())
			}
		}
		dst.Set(m)
	default:
		v := reflect.New(dst.Type())
		if d.decode(p, v, key) {
			dst.Set(v.Elem())
		}
	}
}

// subTable decodes the table at key one level deep, reporting a value
// that is not a table.
func (d *configDecoder) subTable(p toml.Primitive, key []string) (map[string]toml.Primitive, bool) {
	var t map[string]toml.Primitive
	if kind := d.kind(p); kind != kindTable || d.md.PrimitiveDecode(p, &t) != nil {
		d.add(key, fmt.Sprintf("key %s: must be a table, not %s", shownKey(toml.Key(key).String()), kind))
		return nil, false
	}
	return t, true
}

// decode decodes a single value into the pointer v and reports whether it
// fit.
func (d *configDecoder) decode(p toml.Primitive, v reflect.Value, key []string) bool {
	err := d.md.PrimitiveDecode(p, v.Interface())
	_, isDuration := v.Interface().(*Duration)
	if err == nil {
		var text string
		if isDuration && d.md.PrimitiveDecode(p, &text) == nil {
			if d.written == nil {
				d.written = map[string]string{}
			}
			d.written[strings.Join(key, ".")] = text
		}
		return true
	}
	name := shownKey(toml.Key(key).String())
	if isDuration {
		if msg := d.durationNotString(p); msg != "" {
			d.add(key, fmt.Sprintf("key %s: %s", name, msg))
			return false
		}
	}
	var pe toml.ParseError
	switch {
	case errors.As(err, &pe):
		// Our own UnmarshalText and UnmarshalTOML say what is wrong.
		d.add(key, fmt.Sprintf("key %s: %s", name, parserWords(pe.Message)))
	case strings.Contains(err.Error(), "incompatible types"):
		d.add(key, fmt.Sprintf("key %s: must be %s, not %s", name, goWords(v.Type().Elem()), d.kind(p)))
	default:
		d.add(key, fmt.Sprintf("key %s: %s", name, parserWords(tomlErrorRe().ReplaceAllString(err.Error(), ""))))
	}
	return false
}

// durationNotString says what is wrong with a duration written as some
// other TOML type, or "" for a string. The decoder hands UnmarshalText the
// value as text, so startup_grace = 5 read as if "5" had been written,
// quoting a number the file never quoted.
func (d *configDecoder) durationNotString(p toml.Primitive) string {
	var v any
	if d.md.PrimitiveDecode(p, &v) != nil {
		return ""
	}
	switch n := v.(type) {
	case string:
		return ""
	case int64, float64:
		return fmt.Sprintf("%v is a number without a unit: a duration is a string with one, e.g. \"%vs\" or \"300ms\"", n, n)
	}
	return fmt.Sprintf("must be a duration, a string such as \"300ms\" or \"2s\", not %s", d.kind(p))
}

// TOMLParseMessage is what the TOML parser said of data, in our words
// where its own name no line: a key or table given twice names both
// ("\"detect.debounce\" is set twice (lines 2 and 3); keep one" for
// "Key 'detect.debounce' has already been defined."), the key clipped as
// every key a message names is, so that parserWords' cut never takes the
// lines and the fix. No final period: the caller may go on.
func TOMLParseMessage(data []byte, pe toml.ParseError) string {
	dup := duplicateKeyRe().FindStringSubmatch(pe.Message)
	if dup == nil {
		return parserWords(strings.TrimSuffix(pe.Message, "."))
	}
	if first := locateKey(data, splitDotted(dup[1])); first > 0 && first < pe.Position.Line {
		return parserWords(fmt.Sprintf("%s is set twice (lines %d and %d); keep one", shownKey(dup[1]), first, pe.Position.Line))
	}
	return parserWords(fmt.Sprintf("%s is set twice; keep one", shownKey(dup[1])))
}

// parserWords is a message of the TOML parser as herdr-pi says it: on one
// line, its control characters escaped (the parser quotes the text it
// stopped at raw, a line break included), and cut after maxParserWords
// bytes saying how long it was (that text may be most of a MiB).
func parserWords(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	s = b.String()
	if len(s) <= maxParserWords {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(s[:maxParserWords], ""), len(s))
}

// maxParserWords is the most of a parser's message herdr-pi repeats: its
// sentence and a quote long enough to find the place.
const maxParserWords = 200

// TOMLParseLine is the line a TOML parse error is on, from the byte it
// points at: the parser counts the newline that ends an unclosed table
// header ("[detect") as the next line's, and an error at the end of the
// file is on its last line, not on the empty one after it.
func TOMLParseLine(data []byte, pe toml.ParseError) int {
	at := pe.Position.Start
	if pe.Position.Line == 0 || at < 0 || at > len(data) {
		return pe.Position.Line
	}
	if at == len(data) && at > 0 && data[at-1] == '\n' {
		at--
	}
	return 1 + bytes.Count(data[:at], []byte("\n"))
}

// duplicateKeyRe is the TOML parser's message for a key or table given
// twice.
var duplicateKeyRe = lazyre.New(`^Key '([^']*)' has already been defined\.?$`)

// tomlErrorRe is the decoder's prefix to a message: the line and key,
// which a Problem already holds.
var tomlErrorRe = lazyre.New(`^toml: (line \d+ \(last key "[^"]*"\): )?`)

// fieldFor is the field of struct v whose toml tag is name.
func fieldFor(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ","); tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// fieldNames are the keys the struct v takes, from its fields' toml tags.
func fieldNames(v reflect.Value) []string {
	names := make([]string, 0, v.NumField())
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

// goWords names what a field of Config takes, in the file's terms.
func goWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return goWords(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Slice:
		return "an array"
	}
	return "a " + t.Kind().String()
}

func unknownKeyMsg(key []string) string {
	name := key[len(key)-1]
	if len(key) == 1 {
		return fmt.Sprintf("unknown key %s at the top level", shownKey(name))
	}
	return fmt.Sprintf("unknown key %s in [%s]", shownKey(name), parserWords(strings.Join(key[:len(key)-1], ".")))
}

// shownKey is a key of a settings file as a problem quotes it: escaped,
// and cut short (a key may be most of a MiB; wrap prints every problem at
// its start).
func shownKey(k string) string { return QuoteClipped(k, 80) }

var tomlLineRe = lazyre.New(`line (\d+)`)

func lineFromTOMLError(err error) int {
	m := tomlLineRe().FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n := 0
	fmt.Sscan(m[1], &n)
	return n
}

type invalid struct {
	key []string
	msg string
}

var (
	sourceRe    = lazyre.New(`^[A-Za-z0-9:._-]{1,80}$`)
	ntfyTopicRe = lazyre.New(`^[-_A-Za-z0-9]{1,64}$`)
	protocols   = []string{"osc9", "osc99", "osc777"}
)

// validate checks the values' ranges and words; written gives a duration
// by dotted key as the file spells it, for the message.
func (c Config) validate(written map[string]string) []invalid {
	var out []invalid
	// asWritten is a duration as the person wrote it, else Go's spelling.
	asWritten := func(d Duration, key ...string) string {
		if text, ok := written[strings.Join(key, ".")]; ok {
			return text
		}
		return d.D().String()
	}
	bad := func(msg string, key ...string) { out = append(out, invalid{key: key, msg: msg}) }
	oneOf := func(v string, allowed []string, key ...string) {
		if !slices.Contains(allowed, v) {
			bad(fmt.Sprintf("%s = %q: must be one of %s", key[len(key)-1], v, strings.Join(allowed, ", ")), key...)
		}
	}
	if !sourceRe().MatchString(c.Herdr.Source) {
		bad(fmt.Sprintf("source = %q: use 1 to 80 characters from A-Z a-z 0-9 : . _ - (e.g. \"custom:herdr-pi\")", c.Herdr.Source), "herdr", "source")
	}
	// The agent id goes into every report and log line: it must be a
	// short identifier. Empty is the default: the pane shows the agent
	// detection reads the screen as.
	if c.Herdr.Agent != "" {
		if err := CheckAgent(c.Herdr.Agent); err != nil {
			bad(err.Error()+"; leave it out to show the agent herdr-pi detects", "herdr", "agent")
		}
	}
	if c.Detect.Agent != "" {
		if err := CheckAgent(c.Detect.Agent); err != nil {
			bad(err.Error()+"; leave it out to pick the manifest from the command", "detect", "agent")
		}
	}
	if d := c.Detect.Debounce.D(); d < 0 || d > 10*time.Second {
		bad(fmt.Sprintf("debounce = %q: must be between 0s and 10s", asWritten(c.Detect.Debounce, "detect", "debounce")), "detect", "debounce")
	}
	if d := c.Detect.StartupGrace.D(); d < 0 || d > time.Minute {
		bad(fmt.Sprintf("startup_grace = %q: must be between 0s and 1m", asWritten(c.Detect.StartupGrace, "detect", "startup_grace")), "detect", "startup_grace")
	}
	switch channel := c.Notify.Channel; {
	// "channel" reads like "where notifications go", so ntfy and the
	// terminal protocols land here; say where they are set.
	case channel == "ntfy":
		bad(`channel = "ntfy": must be one of auto, herdr, terminal, off; ntfy is not chosen here, it runs beside the on-screen channel: turn it on with [notify.ntfy] enabled = true and a topic`, "notify", "channel")
	case slices.Contains(protocols, channel):
		bad(fmt.Sprintf(`channel = %q: must be one of auto, herdr, terminal, off; a terminal protocol is set with [notify] fallback or [notify.term_programs], and channel = "terminal" (or "auto" outside Herdr) uses it`, channel), "notify", "channel")
	default:
		oneOf(channel, []string{"auto", "herdr", "terminal", "off"}, "notify", "channel")
	}
	oneOf(c.Notify.Sound, []string{"none", "done", "request"}, "notify", "sound")
	if d := c.Notify.FinishedAfter.D(); d < 0 || d > 24*time.Hour {
		bad(fmt.Sprintf("finished_after = %q: must be between 0s (every run) and 24h", asWritten(c.Notify.FinishedAfter, "notify", "finished_after")), "notify", "finished_after")
	}
	if c.Notify.Fallback != "" {
		oneOf(c.Notify.Fallback, protocols, "notify", "fallback")
	}
	names := make([]string, 0, len(c.Notify.TermPrograms))
	for name := range c.Notify.TermPrograms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			// ResolveWhy never looks up an empty TERM_PROGRAM: the entry
			// could only ever be dead weight the user believes in.
			bad(fmt.Sprintf("term_programs.%q: an empty name matches no terminal; name a TERM_PROGRAM value, e.g. WezTerm = \"osc9\"", name), "notify", "term_programs", name)
			continue
		}
		if v := c.Notify.TermPrograms[name]; !slices.Contains(protocols, v) {
			bad(fmt.Sprintf("term_programs.%s = %q: must be one of %s", name, v, strings.Join(protocols, ", ")), "notify", "term_programs", name)
		}
	}
	n := c.Notify.Ntfy
	if u, err := url.Parse(n.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		bad(fmt.Sprintf("server = %q: must be an http(s) URL with a host and no query or fragment", redact.URL(n.Server)), "notify", "ntfy", "server")
	}
	if n.Enabled && !ntfyTopicRe().MatchString(n.Topic) {
		bad(fmt.Sprintf("topic = %q: ntfy needs 1 to 64 characters from A-Z a-z 0-9 _ -", n.Topic), "notify", "ntfy", "topic")
	}
	if n.Priority < 1 || n.Priority > 5 {
		bad(fmt.Sprintf("priority = %d: must be 1 to 5", n.Priority), "notify", "ntfy", "priority")
	}
	if d := n.Timeout.D(); d <= 0 || d > time.Minute {
		bad(fmt.Sprintf("timeout = %q: must be above 0s and at most 1m", asWritten(n.Timeout, "notify", "ntfy", "timeout")), "notify", "ntfy", "timeout")
	}
	if len(c.Open.Pi) == 0 || c.Open.Pi[0] == "" {
		bad(`pi: name the Pi command, e.g. "pi" or ["node", "/opt/pi/dist/cli.js"]`, "open", "pi")
	}
	oneOf(c.Log.Level, []string{"info", "debug"}, "log", "level")
	return out
}
