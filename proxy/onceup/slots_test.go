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
		for _, db := range []int{0, 2, 15} {
			if got := chanIDOf(Channel(s, db)); got != chanID(db, s) || channelOf(got) != Channel(s, db) {
				t.Fatalf("chanIDOf(%q) = %d, want %d (slot %d, db %d)", Channel(s, db), got, chanID(db, s), s, db)
			}
		}
	}
	if longest > 3 {
		t.Errorf("longest tag %d characters", longest)
	}
	for _, ch := range []string{"oncekv:ev:{zz9}x", "oncekv:ev:{0}0", "oncekv:ev:{0}-1", "oncekv:ev:{}", "oncekv:ev:{0", "other", flushChannel} {
		if chanIDOf(ch) != -1 {
			t.Errorf("chanIDOf accepted a foreign channel %q", ch)
		}
	}
}
