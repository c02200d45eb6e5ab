package herdrtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// params decodes one request's params the way Herdr's typed decoding does:
// missing required fields and wrong types fail the whole request as
// invalid_request (herdr-socket-api.md §2.3), null counts as absent for
// optional fields, unknown keys are ignored (§2.1). The first failure wins.
type params struct {
	m   map[string]json.RawMessage
	err string
	req int // the request's arrival number (Request.N), 0 when not from a connection
}

func newParams(raw json.RawMessage) *params {
	p := &params{}
	if err := json.Unmarshal(raw, &p.m); err != nil || p.m == nil {
		p.err = "invalid type: params must be an object"
	}
	return p
}

func (p *params) fail(format string, args ...any) {
	if p.err == "" {
		p.err = fmt.Sprintf(format, args...)
	}
}

func (p *params) raw(name string) (json.RawMessage, bool) {
	v, ok := p.m[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

func (p *params) decode(name string, v any, want string) bool {
	raw, ok := p.raw(name)
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		p.fail("invalid type for `%s`: %s, expected %s", name, strings.TrimSpace(string(raw)), want)
		return false
	}
	return true
}

func (p *params) required(name string) bool {
	if p.err != "" {
		return false
	}
	if v, ok := p.m[name]; !ok {
		p.fail("missing field `%s`", name)
		return false
	} else if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		p.fail("invalid type for `%s`: null", name)
		return false
	}
	return true
}

func (p *params) str(name string) string {
	var s string
	if p.required(name) {
		p.decode(name, &s, "a string")
	}
	return s
}

func (p *params) optStr(name string) (string, bool) {
	var s string
	ok := p.decode(name, &s, "a string")
	return s, ok
}

func (p *params) optBool(name string) bool {
	var b bool
	p.decode(name, &b, "a boolean")
	return b
}

func (p *params) optU64(name string) (uint64, bool) {
	var n uint64
	ok := p.decode(name, &n, "an unsigned 64-bit integer")
	return n, ok
}

func (p *params) optF64(name string) (float64, bool) {
	var f float64
	ok := p.decode(name, &f, "a number")
	return f, ok
}

func (p *params) optStrMap(name string) map[string]string {
	var m map[string]string
	p.decode(name, &m, "a map of strings")
	return m
}

func (p *params) optStrSlice(name string) []string {
	var s []string
	p.decode(name, &s, "a sequence of strings")
	return s
}

// enum checks that a present string is one of allowed.
func (p *params) enum(name, v string, present bool, allowed ...string) {
	if present && !slices.Contains(allowed, v) {
		p.fail("unknown variant `%s` for `%s`, expected one of %s", v, name, strings.Join(allowed, ", "))
	}
}
