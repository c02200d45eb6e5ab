package redact

import "testing"

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
