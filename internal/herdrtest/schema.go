package herdrtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaRel is where the reference copy of Herdr's protocol-20 schema sits
// below the directory that holds the project's shared/ folder.
const schemaRel = "shared/reference/herdr/herdr-api.schema.json"

// SchemaEnv names a variable that, when set, points at the schema file and
// overrides the search.
const SchemaEnv = "HERDR_API_SCHEMA"

// FindSchema returns the path of herdr-api.schema.json, looking in
// $HERDR_API_SCHEMA and then in shared/ next to dir and each of its parents
// (a worktree or a clone has ../shared beside it). "" when absent, as in a
// fresh clone without shared/.
func FindSchema(dir string) string {
	if p := os.Getenv(SchemaEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(d, schemaRel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// validator checks lines against the schema: requests herdr-pi sends, and
// the fake's own replies and events (so the fake stays honest too).
type validator struct {
	path     string
	request  *jsonschema.Schema
	byMethod map[string]*jsonschema.Schema
	success  *jsonschema.Schema
	failure  *jsonschema.Schema
	event    *jsonschema.Schema
	subEvent *jsonschema.Schema
	// paramKeys are the params fields each method's type declares.
	paramKeys map[string]map[string]bool
}

var (
	validatorOnce sync.Once
	validatorVal  *validator
	validatorErr  error
)

// loadValidator compiles the schema once per process. It returns nil, nil
// when no schema file can be found.
func loadValidator() (*validator, error) {
	validatorOnce.Do(func() {
		wd, _ := os.Getwd()
		path := FindSchema(wd)
		if path == "" {
			return
		}
		validatorVal, validatorErr = compileValidator(path)
	})
	return validatorVal, validatorErr
}

func compileValidator(path string) (*validator, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	const url = "herdr-api.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	v := &validator{path: path, byMethod: map[string]*jsonschema.Schema{}, paramKeys: map[string]map[string]bool{}}
	for _, s := range []struct {
		ptr string
		dst **jsonschema.Schema
	}{
		{"#/schemas/request", &v.request},
		{"#/schemas/success_response", &v.success},
		{"#/schemas/error_response", &v.failure},
		{"#/schemas/event", &v.event},
		{"#/schemas/subscription_event", &v.subEvent},
	} {
		if *s.dst, err = c.Compile(url + s.ptr); err != nil {
			return nil, fmt.Errorf("%s%s: %w", path, s.ptr, err)
		}
	}
	// One branch per method, for short messages about a known method.
	branches := doc.(map[string]any)["schemas"].(map[string]any)["request"].(map[string]any)["oneOf"].([]any)
	for i, b := range branches {
		m, _ := b.(map[string]any)["properties"].(map[string]any)["method"].(map[string]any)["const"].(string)
		if m == "" {
			continue
		}
		if v.byMethod[m], err = c.Compile(url + "#/schemas/request/oneOf/" + strconv.Itoa(i)); err != nil {
			return nil, err
		}
		v.paramKeys[m] = paramProperties(doc, b)
	}
	return v, nil
}

// checkRequest validates one request line; "" means valid.
func (v *validator) checkRequest(line []byte) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return "not JSON: " + err.Error()
	}
	if err := v.request.Validate(inst); err == nil {
		return ""
	} else if obj, ok := inst.(map[string]any); ok {
		if m, ok := obj["method"].(string); ok && v.byMethod[m] != nil {
			if berr := v.byMethod[m].Validate(inst); berr != nil {
				return short(berr)
			}
			return short(err) // the branch passed: the envelope (id) failed
		}
		return fmt.Sprintf("method %v is not in the schema", obj["method"])
	}
	return short(err)
}

// checkOutput validates a line the fake writes against the schema for its
// kind: "success", "error", "event" or "subscription_event".
func (v *validator) checkOutput(kind string, line []byte) string {
	s := map[string]*jsonschema.Schema{"success": v.success, "error": v.failure, "event": v.event, "subscription_event": v.subEvent}[kind]
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return "not JSON: " + err.Error()
	}
	if err := s.Validate(inst); err != nil {
		return short(err)
	}
	return ""
}

func short(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 700 {
		s = s[:700] + "…"
	}
	return s
}

// paramProperties lists the properties of one request branch's params
// type (a $ref into the request's $defs); empty for a type without any.
func paramProperties(doc, branch any) map[string]bool {
	keys := map[string]bool{}
	get := func(v any, k string) any { m, _ := v.(map[string]any); return m[k] }
	ref, _ := get(get(get(branch, "properties"), "params"), "$ref").(string)
	name, ok := strings.CutPrefix(ref, "#/schemas/request/$defs/")
	if !ok {
		return keys
	}
	props, _ := get(get(get(get(get(doc, "schemas"), "request"), "$defs"), name), "properties").(map[string]any)
	for k := range props {
		keys[k] = true
	}
	return keys
}
