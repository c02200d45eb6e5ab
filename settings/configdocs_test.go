package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// docsKeyBlock is the ```toml block under "## Every key" of
// docs/configuration.md: the page a person copies keys from.
func docsKeyBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Every key\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## Every key" section`)
	}
	_, rest, ok = strings.Cut(rest, "```toml\n")
	if !ok {
		t.Fatal(`"## Every key" in docs/configuration.md holds no toml block`)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the toml block of docs/configuration.md is not closed")
	}
	return block
}

// configKeys lists the dotted key of every setting in a struct of
// [Config], by its toml tags; a map is one key (its table's entries are
// the person's own names).
func configKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := prefix + f.Tag.Get("toml")
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, configKeys(f.Type, key+".")...)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// The block under "Every key" in docs/configuration.md is what a person
// copies into their config.toml: pasted as it is it must read without a
// problem and give exactly the defaults it states, and it must name every
// key the program reads (a key left out there is one nobody finds) and
// none it does not (a commented example that is no key is one that fails
// when uncommented).
func TestConfigurationDocsListEveryKeyWithItsDefault(t *testing.T) {
	block := docsKeyBlock(t)
	cfg, problems := ParseConfig([]byte(block), "docs/configuration.md")
	if len(problems) > 0 {
		t.Fatalf("the block of docs/configuration.md, pasted as a config, has problems: %v", problems)
	}
	if !cfg.NotifyEnabled() {
		t.Error("docs/configuration.md says notifications are off by default; they are on")
	}
	cfg.Notify.Enabled = nil // Defaults leaves it unset, which means on
	if len(cfg.Notify.TermPrograms) == 0 {
		cfg.Notify.TermPrograms = nil // the empty [notify.term_programs] of the block
	}
	if want := Defaults(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("the values docs/configuration.md gives are not the defaults:\n docs     %+v\n defaults %+v", cfg, want)
	}

	// Every key, set or commented out, under the table it belongs to.
	table := ""
	named, tables := map[string]bool{}, map[string]bool{}
	header := regexp.MustCompile(`^\[([a-z_.]+)\]`)
	assign := regexp.MustCompile(`^(?:# )?([A-Za-z_]+) = `)
	for line := range strings.Lines(block) {
		if m := header.FindStringSubmatch(line); m != nil {
			table = m[1]
			tables[table] = true
			continue
		}
		if m := assign.FindStringSubmatch(line); m != nil {
			named[table+"."+m[1]] = true
		}
	}
	known := configKeys(reflect.TypeFor[Config](), "")
	for _, key := range known {
		if !named[key] && !tables[key] {
			t.Errorf("key %s is read from config.toml but docs/configuration.md does not list it", key)
		}
	}
	for key := range named {
		if slices.Contains(known, key) || strings.HasPrefix(key, "notify.term_programs.") {
			continue
		}
		t.Errorf("docs/configuration.md lists %s, which is no key of config.toml", key)
	}
}
