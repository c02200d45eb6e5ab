package herdr

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"
)

// Capabilities are the optional server features ping announces. Protocol
// 20 sends booleans (herdr-socket-api.md §2.4); Herdr 0.9.1 puts a number
// among them (endpoint_protocol_generation, landscape.md §9), so a value
// is read as what it is and a capability never fails a ping: a boolean is
// itself, a number is on unless zero, anything else is kept but off.
type Capabilities struct {
	LiveHandoff          bool
	DetachedServerDaemon bool
	// Values holds every capability as announced, by name.
	Values map[string]json.RawMessage
}

// UnmarshalJSON reads capabilities tolerantly; it fails on nothing.
// Anything but an object means no capabilities.
func (c *Capabilities) UnmarshalJSON(b []byte) error {
	*c = Capabilities{}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil
	}
	c.Values = m
	c.LiveHandoff = c.On("live_handoff")
	c.DetachedServerDaemon = c.On("detached_server_daemon")
	return nil
}

// MarshalJSON writes the values as announced.
func (c Capabilities) MarshalJSON() ([]byte, error) {
	if c.Values == nil {
		return json.Marshal(map[string]bool{"live_handoff": c.LiveHandoff, "detached_server_daemon": c.DetachedServerDaemon})
	}
	return json.Marshal(maps.Clone(c.Values))
}

// On reports whether capability name is announced and on: true, or a
// number other than zero.
func (c Capabilities) On(name string) bool {
	raw := bytes.TrimSpace(c.Values[name])
	switch {
	case len(raw) == 0:
		return false
	case string(raw) == "true":
		return true
	case string(raw) == "false":
		return false
	}
	if n, ok := c.Number(name); ok {
		return n != 0
	}
	return false
}

// Number returns capability name when it is a number.
func (c Capabilities) Number(name string) (float64, bool) {
	raw := bytes.TrimSpace(c.Values[name])
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, false
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
