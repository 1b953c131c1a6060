package result

import "testing"

func TestFormat(t *testing.T) {
	tests := []struct {
		metric string
		v      float64
		want   string
	}{
		{ThroughputBitsPerSec, 12.345e9, "12.35 Gbit/s"},
		{ThroughputBitsPerSec, 940e6, "940.0 Mbit/s"},
		{TransPerSec, 45210, "45.2 ktrans/s"},
		{TransPerSec, 812, "812 trans/s"},
		{LatencyUsP99, 25.04, "25.0 µs"},
		{LatencyUsP99, 15300, "15.3 ms"},
		{LossPct, 0.5, "0.5 %"},
		{DatagramsSent, 419500, "419500 datagrams"},
		{"client_ip_frag_creates", 190900, "190900 fragments"},
		{ClientRSSBytes, 20 << 20, "20.0 MiB"},
		{"unknown_thing", 3, "3"},
		{"time_wait_at_start", 20000, "20000 sockets"},
		{"time_wait_at_start", 2.5, "2.5 sockets"},
		{"cpu_profile_reader_cpu_sec", 13.54, "13.54 s"},
	}
	for _, tt := range tests {
		if got := Format(tt.metric, tt.v); got != tt.want {
			t.Errorf("Format(%s, %v) = %q, want %q", tt.metric, tt.v, got, tt.want)
		}
	}
}
