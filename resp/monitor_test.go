package resp

import "testing"

// TestMonitorLimit checks the bound of a monitor's outbox: the normal
// class when it sets a limit, else DefaultMonitorLimit, so that a monitor
// that does not read never grows without end.
func TestMonitorLimit(t *testing.T) {
	tests := []struct {
		name   string
		normal *OutputLimit
		want   OutputLimit
	}{
		{"unset", nil, DefaultMonitorLimit},
		{"no limit", &OutputLimit{}, DefaultMonitorLimit},
		{"hard", &OutputLimit{Hard: 1 << 20}, OutputLimit{Hard: 1 << 20}},
		{"soft", &OutputLimit{Soft: 1 << 10, SoftSeconds: 5}, OutputLimit{Soft: 1 << 10, SoftSeconds: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Server
			if tt.normal != nil {
				s.SetNormalLimit(*tt.normal)
			}
			if got := s.MonitorLimit(); got != tt.want {
				t.Errorf("MonitorLimit = %+v, want %+v", got, tt.want)
			}
		})
	}
}
