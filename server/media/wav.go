package media

import (
	"encoding/binary"
	"math"
)

// MaxAudioSeconds bounds an audio clip's length (10 minutes), checked
// before its samples are converted.
const MaxAudioSeconds = 600

// maxChannels bounds a WAV file's channel count.
const maxChannels = 16

// WAV format tags.
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// DecodeWAV decodes a WAV file into mono float32 samples in [-1, 1] at
// rate samples per second: integer PCM of 8, 16, 24 or 32 bits and IEEE
// float of 32 or 64 bits (plain or WAVE_FORMAT_EXTENSIBLE), any channel
// count up to 16 (averaged into one). A clip recorded at another rate is
// resampled by linear interpolation rather than refused: clients send
// 44.1 or 48 kHz recordings, and speech models (Whisper-style encoders
// at 16 kHz) lose little by it. Clips longer than MaxAudioSeconds are
// refused before conversion. Errors wrap ErrInvalid and say what is
// wrong.
func DecodeWAV(data []byte, rate int) ([]float32, error) {
	if rate <= 0 {
		return nil, invalidf("audio sample rate %d: must be positive", rate)
	}
	if Sniff(data) != "wav" {
		return nil, invalidf("not a WAV file (want a RIFF/WAVE file): %s", describe(data))
	}
	var (
		haveFmt                       bool
		tag, channels, bits, blockLen int
		srcRate                       int
		samples                       []byte
		haveData                      bool
	)
	p := data[12:]
	for len(p) >= 8 && !haveData {
		id, size := string(p[:4]), uint64(binary.LittleEndian.Uint32(p[4:8]))
		p = p[8:]
		if size > uint64(len(p)) {
			if id != "data" {
				return nil, invalidf("truncated WAV file: chunk %q says %d bytes, %d remain", id, size, len(p))
			}
			size = uint64(len(p)) // streamed WAVs leave the data size unset
		}
		body := p[:size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, invalidf("WAV fmt chunk of %d bytes: want at least 16", size)
			}
			tag = int(binary.LittleEndian.Uint16(body[0:2]))
			channels = int(binary.LittleEndian.Uint16(body[2:4]))
			srcRate = int(binary.LittleEndian.Uint32(body[4:8]))
			blockLen = int(binary.LittleEndian.Uint16(body[12:14]))
			bits = int(binary.LittleEndian.Uint16(body[14:16]))
			if tag == wavExtensible {
				if size < 40 {
					return nil, invalidf("WAV extensible fmt chunk of %d bytes: want 40", size)
				}
				tag = int(binary.LittleEndian.Uint16(body[24:26])) // the sub-format GUID's first two bytes
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, invalidf("WAV data chunk before its fmt chunk")
			}
			samples, haveData = body, true
		}
		// Chunks are padded to an even length.
		if size%2 == 1 && size < uint64(len(p)) {
			size++
		}
		p = p[size:]
	}
	if !haveFmt {
		return nil, invalidf("WAV file without a fmt chunk")
	}
	if !haveData {
		return nil, invalidf("WAV file without a data chunk")
	}
	switch {
	case tag == wavPCM && (bits == 8 || bits == 16 || bits == 24 || bits == 32):
	case tag == wavFloat && (bits == 32 || bits == 64):
	case tag == wavPCM || tag == wavFloat:
		return nil, invalidf("WAV with %d-bit samples is not supported (PCM: 8, 16, 24, 32 bits; float: 32, 64)", bits)
	default:
		return nil, invalidf("WAV format tag %d is not supported (1: PCM, 3: IEEE float)", tag)
	}
	if channels < 1 || channels > maxChannels {
		return nil, invalidf("WAV with %d channels: want 1 to %d", channels, maxChannels)
	}
	if srcRate < 1 {
		return nil, invalidf("WAV sample rate %d: must be positive", srcRate)
	}
	if blockLen != channels*bits/8 {
		return nil, invalidf("WAV block size %d does not match %d channels of %d bits", blockLen, channels, bits)
	}
	frames := len(samples) / blockLen
	if frames == 0 {
		return nil, invalidf("WAV file has no samples")
	}
	if frames/srcRate >= MaxAudioSeconds {
		return nil, invalidf("audio clip of %d seconds is longer than the limit of %d seconds", frames/srcRate, MaxAudioSeconds)
	}
	mono := make([]float32, frames)
	width := bits / 8
	for i := range mono {
		var sum float64
		for c := 0; c < channels; c++ {
			sum += sample(samples[i*blockLen+c*width:], tag, bits)
		}
		v := sum / float64(channels)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0 // a float WAV may hold anything
		}
		mono[i] = float32(max(-1, min(1, v)))
	}
	if srcRate == rate {
		return mono, nil
	}
	return resample(mono, srcRate, rate), nil
}

// sample reads one sample as a value in [-1, 1] (float data as stored).
func sample(b []byte, tag, bits int) float64 {
	if tag == wavFloat {
		if bits == 32 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	switch bits {
	case 8: // unsigned
		return (float64(b[0]) - 128) / 128
	case 16:
		return float64(int16(binary.LittleEndian.Uint16(b))) / 32768
	case 24:
		v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
		return float64(v) / (1 << 23)
	default:
		return float64(int32(binary.LittleEndian.Uint32(b))) / (1 << 31)
	}
}

// resample converts samples from one rate to another by linear
// interpolation. The output length is bounded by the caller's check of
// the clip's duration (at most MaxAudioSeconds × to samples).
func resample(in []float32, from, to int) []float32 {
	n := int(int64(len(in)) * int64(to) / int64(from))
	if n < 1 {
		n = 1
	}
	out := make([]float32, n)
	step := float64(from) / float64(to)
	for i := range out {
		pos := float64(i) * step
		j := int(pos)
		if j >= len(in)-1 {
			out[i] = in[len(in)-1]
			continue
		}
		f := float32(pos - float64(j))
		out[i] = in[j]*(1-f) + in[j+1]*f
	}
	return out
}
