package redact

import (
	"slices"
	"strings"
	"testing"
)

func TestURLHidesThePassword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://ntfy.sh", "https://ntfy.sh"},
		{"https://user:hunter2@ntfy.example.com/", "https://user:xxxxx@ntfy.example.com/"},
		{"https://user@ntfy.example.com/", "https://user@ntfy.example.com/"},
		// Not a URL url.Parse takes (a bad escape): still masked.
		{"https://user:hun%zzter2@ntfy.example.com/", "https://user:xxxxx@ntfy.example.com/"},
		{"https://user:p@ss:w@rd@host/x?y", "https://user:xxxxx@host/x?y"},
		{"https://user:pw@host/a@b", "https://user:xxxxx@host/a@b"},
		{"https://host/a:b@c", "https://host/a:b@c"},
		{"not a url", "not a url"},
		{"", ""},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// What a model provider's error can echo — a key it refused, a URL with
// credentials, an Authorization header — is hidden from text that is
// shown; the words around it stay.
func TestTextHidesSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Real Pi 1.6.0 error messages (against a fake model server).
		{"Connection error.: Request cannot be constructed from a URL that includes credentials: http://user:pass123@127.0.0.1/v1/chat/completions",
			"Connection error.: Request cannot be constructed from a URL that includes credentials: http://xxxxx@127.0.0.1/v1/chat/completions"},
		{"Incorrect API key provided: sk-proj-****cdef. You can find your API key at https://platform.openai.com/account/api-keys.",
			"Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"Connection error.: connect ECONNREFUSED 127.0.0.1:8080", "Connection error.: connect ECONNREFUSED 127.0.0.1:8080"},
		// Keys by their well-known shapes.
		{"invalid x-api-key sk-ant-api03-AbCd_12-xyz", "invalid x-api-key xxxxx"},
		{"key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW is not valid", "key xxxxx is not valid"},
		{"token ghp_abcdefghijklmnop1234 and github_pat_11ABC_def", "token xxxxx and xxxxx"},
		{"user AKIAIOSFODNN7EXAMPLE denied", "user xxxxx denied"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig expired", "jwt xxxxx expired"},
		// Headers and assignments, whatever the value looks like.
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer xxxxx"},
		{"sent authorization=Basic dXNlcjpwYXNz", "sent authorization=Basic xxxxx"},
		{`{"api_key": "hunter2", "model": "m"}`, `{"api_key": "xxxxx", "model": "m"}`},
		{"password=hunter2; token: s3cr3t", "password=xxxxx; token: xxxxx"},
		// A URL's query values and every part of its userinfo.
		{"GET https://generativelanguage.googleapis.com/v1/models?key=abc&alt=sse failed",
			"GET https://generativelanguage.googleapis.com/v1/models?key=xxxxx&alt=xxxxx failed"},
		{"clone https://x-access-token@github.com/o/r", "clone https://xxxxx@github.com/o/r"},
		// Long random-looking strings, but not the names models have.
		{"key 9f86d081884c7d659a2feaa0c55ad015 rejected", "key xxxxx rejected"},
		{"secret Zx8Qp2Lm9Rt4Vw7Ys1Ab3Cd5 seen", "secret xxxxx seen"},
		{"model anthropic.claude-3-5-sonnet-20241022-v2:0 is overloaded", "model anthropic.claude-3-5-sonnet-20241022-v2:0 is overloaded"},
		{"429 Too Many Requests: rate limit for gpt-4o-mini-2024-07-18", "429 Too Many Requests: rate limit for gpt-4o-mini-2024-07-18"},
		{"task-skills and desk-lamp", "task-skills and desk-lamp"},
		{"", ""},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// A command line keeps its shape and its session paths for the log, but
// not the secrets given on it: by an option's or a variable's name, or by
// a key's shape anywhere in a word.
func TestArgvHidesTheSecretsOfACommandLine(t *testing.T) {
	session := "/home/u/.pi/agent/sessions/--home-u--/2026-12-06T01-21-21-729Z_0193f2a4-7c1e-7b3a-9f10-3c9d2e4b5a6f.jsonl"
	for _, tc := range []struct{ in, want []string }{
		{[]string{"pi", "--api-key", "hunter2", "--model", "claude-sonnet-4-5", "--session", session},
			[]string{"pi", "--api-key", "xxxxx", "--model", "claude-sonnet-4-5", "--session", session}},
		{[]string{"env", "OPENAI_API_KEY=hunter2", "DB_PASSWORD=x", "AWS_SECRET_ACCESS_KEY=y", "HOME=/h", "pi"},
			[]string{"env", "OPENAI_API_KEY=xxxxx", "DB_PASSWORD=xxxxx", "AWS_SECRET_ACCESS_KEY=xxxxx", "HOME=/h", "pi"}},
		{[]string{"tool", "--token=abc", "-key", "k", "--auth-token", "t", "--keyring-dir", "/k"},
			[]string{"tool", "--token=xxxxx", "-key", "xxxxx", "--auth-token", "xxxxx", "--keyring-dir", "/k"}},
		// A secret's option last, or followed by another option, hides nothing more.
		{[]string{"pi", "--api-key"}, []string{"pi", "--api-key"}},
		{[]string{"pi", "--api-key", "--verbose"}, []string{"pi", "--api-key", "--verbose"}},
		// Inside a script or a prompt, what Text finds by shape or name.
		{[]string{"sh", "-c", "TOKEN=abc pi 'use sk-ant-api03-AbCd_12-xyz'"}, []string{"sh", "-c", "TOKEN=xxxxx pi 'use xxxxx'"}},
		{[]string{"pi", "fix it: a=1 and https://u:pw@h/x?k=v"}, []string{"pi", "fix it: a=1 and https://xxxxx@h/x?k=xxxxx"}},
		{nil, []string{}},
	} {
		in := slices.Clone(tc.in)
		if got := Argv(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Argv(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("Argv changed its argument to %q", tc.in)
		}
	}
}

// A script given to a shell (sh -c, bash -lc, as a Herdr pane's command
// often is) sets the key itself: by an environment assignment, which names
// such as OPENAI_API_KEY or GITHUB_TOKEN hold inside a longer name, or by
// an option of the command it runs. Its value goes, and the rest stays.
func TestArgvHidesTheSecretsInsideAScript(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"OPENAI_API_KEY=plain1 pi", "OPENAI_API_KEY=xxxxx pi"},
		{"export ANTHROPIC_AUTH_TOKEN=plain2; exec pi", "export ANTHROPIC_AUTH_TOKEN=xxxxx; exec pi"},
		{`cd /w && DB_PASSWORD="two words" GITHUB_TOKEN='plain3' pi -c`, `cd /w && DB_PASSWORD=xxxxx GITHUB_TOKEN=xxxxx pi -c`},
		{"pi --verbose --api-key plain4 --model gpt-4o", "pi --verbose --api-key xxxxx --model gpt-4o"},
		{"pi --openai-key=plain5|tee log", "pi --openai-key=xxxxx|tee log"},
		// What names no secret stays, for the person reading the log.
		{"HOME=/h PI_SESSION=/s/a.jsonl pi --model gpt-4o --session /s/a.jsonl", "HOME=/h PI_SESSION=/s/a.jsonl pi --model gpt-4o --session /s/a.jsonl"},
		{"pi --api-key --verbose", "pi --api-key --verbose"},
	} {
		argv := []string{"bash", "-lc", tc.in}
		if got := Argv(argv); got[2] != tc.want {
			t.Errorf("Argv(%q)[2]\n = %q\nwant %q", argv, got[2], tc.want)
		}
	}
}

// FuzzText: a key planted anywhere never survives, and hiding is stable
// (what Text returns has nothing left to hide).
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "401 Unauthorized", "http://u:p@h/x?k=v", "Bearer ", "api_key=", "sk-", "é\x00\xff"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, before, after string) {
		for _, key := range []string{"sk-ant-api03-PLANTED1", "Bearer PLANTED2", "https://u:PLANTED3@h/", "api_key=PLANTED4"} {
			s := before + " " + key + " " + after
			got := Text(s)
			if strings.Contains(got, "PLANTED") && !strings.Contains(before+after, "PLANTED") {
				t.Fatalf("Text(%q) = %q keeps the key", s, got)
			}
		}
		got := Text(before)
		if again := Text(got); again != got {
			t.Fatalf("Text(%q) = %q, but Text of that = %q", before, got, again)
		}
	})
}

// FuzzArgv: a secret given by name or shape never survives, whatever
// words surround it, and every word keeps its place.
func FuzzArgv(f *testing.F) {
	for _, s := range []string{"", "pi", "--api-key", "-", "=", "a=b c", "é\x00\xff"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, before, after string) {
		for _, planted := range [][]string{{"--api-key", "PLANTED1"}, {"OPENAI_API_KEY=PLANTED2"}, {"--token=PLANTED3"}, {"use sk-ant-api03-PLANTED4 now"}} {
			argv := slices.Concat([]string{before}, planted, []string{after})
			got := Argv(argv)
			if len(got) != len(argv) {
				t.Fatalf("Argv(%q) = %q: %d words from %d", argv, got, len(got), len(argv))
			}
			if strings.Contains(strings.Join(got, " "), "PLANTED") && !strings.Contains(before+after, "PLANTED") {
				t.Fatalf("Argv(%q) = %q keeps the secret", argv, got)
			}
		}
	})
}
