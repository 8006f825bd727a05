package models

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseOption(t *testing.T) {
	tests := []struct {
		name, value string
		want        any
		err         string
	}{
		{"num_ctx", "4096", 4096, ""},
		{"seed", "-1", -1, ""},
		{"num_ctx", " 8 ", 8, ""},
		{"temperature", "0.7", 0.7, ""},
		{"top_p", "1", 1.0, ""},
		{"min_p", "5e-2", 0.05, ""},
		{"use_mmap", "false", false, ""},
		{"use_mlock", "TRUE", true, ""},
		{"stop", "<|im_end|>", "<|im_end|>", ""},
		{"stop", " spaced ", " spaced ", ""},
		{"mirostat", "2", 2, ""},
		{"tfs_z", "1.0", 1.0, ""},
		{"num_ctx", "4096.0", nil, "not an integer"},
		{"temperature", "NaN", nil, "not a number"},
		{"temperature", "warm", nil, "not a number"},
		{"use_mmap", "yes", nil, "not a boolean"},
		{"Temperature", "1", nil, "unknown parameter"},
		{"stop_words", "x", nil, `unknown parameter "stop_words"`},
	}
	for _, tt := range tests {
		got, err := ParseOption(tt.name, tt.value)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.name) {
				t.Errorf("ParseOption(%q, %q) = %v, %v; want error %q naming the parameter", tt.name, tt.value, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseOption(%q, %q) = %#v, %v; want %#v", tt.name, tt.value, got, err, tt.want)
		}
	}
}

func TestNormalizeOption(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
		bad  bool
	}{
		{"num_ctx", float64(2048), 2048, false},
		{"num_ctx", 2048, 2048, false},
		{"num_ctx", "2048", 2048, false},
		{"num_ctx", 2048.5, nil, true},
		{"num_ctx", true, nil, true},
		// Values the engine would refuse (or once aborted on) are refused
		// when the model is created.
		{"num_ctx", float64(288230376151711800), nil, true},
		{"num_ctx", "288230376151711800", nil, true},
		{"num_batch", float64(1 << 40), nil, true},
		{"num_thread", 100000, nil, true},
		{"num_gpu", -2, nil, true},
		{"mirostat", "3", nil, true},
		{"num_thread", 8, 8, false},
		{"temperature", float32(0.7), 0.7, false},
		{"temperature", float64(1), 1.0, false},
		{"temperature", 1, 1.0, false},
		{"use_mmap", true, true, false},
		{"use_mmap", "false", false, false},
		{"use_mmap", 1.0, nil, true},
		{"stop", "x", []string{"x"}, false},
		{"stop", []any{"a", "b"}, []string{"a", "b"}, false},
		{"stop", []string{"a"}, []string{"a"}, false},
		{"stop", []any{"a", 1.0}, nil, true},
		{"stop", 3.0, nil, true},
		{"nope", 1, nil, true},
	}
	for _, tt := range tests {
		got, err := NormalizeOption(tt.name, tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("NormalizeOption(%q, %#v) = %#v, want an error", tt.name, tt.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("NormalizeOption(%q, %#v) = %#v, %v; want %#v", tt.name, tt.in, got, err, tt.want)
		}
	}
}

func TestParamCommands(t *testing.T) {
	cmds, err := ParamCommands(map[string]any{"temperature": 0.5, "stop": []any{"a", "b"}, "num_ctx": float64(512)})
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Name: CmdParameter, Key: "num_ctx", Value: "512"},
		{Name: CmdParameter, Key: "stop", Value: "a"},
		{Name: CmdParameter, Key: "stop", Value: "b"},
		{Name: CmdParameter, Key: "temperature", Value: "0.5"},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("got %q, want %q", cmds, want)
	}
	if _, err := ParamCommands(map[string]any{"bogus": 1}); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("unknown option: err = %v", err)
	}
}

func TestHumanNumber(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1K"}, {260_000, "260K"}, {292_520, "293K"},
		{1_000_000, "1M"}, {134_515_008, "134.52M"}, {1_000_000_000, "1B"},
		{1_100_048_384, "1.1B"}, {7_241_732_096, "7.2B"}, {70_000_000_000, "70B"},
	}
	for _, tt := range tests {
		if got := HumanNumber(tt.n); got != tt.want {
			t.Errorf("HumanNumber(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
