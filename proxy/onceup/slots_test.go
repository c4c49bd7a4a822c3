package onceup

import "testing"

func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
		{"123456789", 0x31C3},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", Slot([]byte("user1000"))},
		{"foo{}{bar}", Slot([]byte("foo{}{bar}"))}, // empty tag: the whole key
		{"foo{{bar}}zap", Slot([]byte("{bar"))},
		{"foo{bar}{zap}", Slot([]byte("bar"))},
	} {
		if got := Slot([]byte(tc.key)); got != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
	if got := Slot([]byte("foo{}{bar}")); got != int(crc16([]byte("foo{}{bar}"))%Slots) {
		t.Errorf("empty tag: slot %d", got)
	}
}

// Every slot has a tag, and the engine's keys of a slot land in it.
func TestTags(t *testing.T) {
	longest := 0
	for s := 0; s < Slots; s++ {
		tag := Tag(s)
		if tag == "" {
			t.Fatalf("slot %d has no tag", s)
		}
		longest = max(longest, len(tag))
		for _, name := range []string{TokenKey(s), Channel(s, 0), Channel(s, 3), OutcomeKey(s, []byte("{x}y"))} {
			if got := Slot([]byte(name)); got != s {
				t.Fatalf("%q is in slot %d, want %d", name, got, s)
			}
		}
		if got := slotOfChannel(Channel(s, 0), 0); got != s {
			t.Fatalf("slotOfChannel(%q) = %d, want %d", Channel(s, 0), got, s)
		}
		if slotOfChannel(Channel(s, 2), 0) != -1 || slotOfChannel(Channel(s, 0), 2) != -1 || slotOfChannel(Channel(s, 2), 2) != s {
			t.Fatalf("slotOfChannel mixes databases")
		}
	}
	if longest > 3 {
		t.Errorf("longest tag %d characters", longest)
	}
	if slotOfChannel("oncekv:ev:{zz9}x", 0) != -1 || slotOfChannel("other", 0) != -1 {
		t.Error("slotOfChannel accepted a foreign channel")
	}
}
