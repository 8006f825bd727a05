package gguf

import (
	"fmt"
	"io"
	"os"
)

// Rewrite writes a copy of the GGUF file src to dst with its metadata
// replaced by edit(metadata); the tensors are copied unchanged, streamed
// from src. It changes a model's metadata without holding its weights in
// memory (and makes the corrupted copies that tests of [File.Validate]
// need). Like [WriteFile], dst never holds a partial file.
func Rewrite(dst, src string, edit func([]KV) []KV) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := Read(in, fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	tensors := make([]Tensor, len(f.Tensors))
	for i, ti := range f.Tensors {
		data := io.NewSectionReader(in, f.DataOffset+int64(ti.Offset), int64(ti.Size()))
		tensors[i] = Tensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Fill: func(w io.Writer) error {
			_, err := io.Copy(w, data)
			return err
		}}
	}
	kvs := append([]KV(nil), f.KVs...)
	return WriteFile(dst, edit(kvs), tensors)
}

// SetKV returns kvs with key set to value: replaced in place when present,
// appended otherwise. With Rewrite it changes one key of a file.
func SetKV(kvs []KV, key string, value any) []KV {
	for i := range kvs {
		if kvs[i].Key == key {
			kvs[i].Value = value
			return kvs
		}
	}
	return append(kvs, KV{Key: key, Value: value})
}

// DeleteKV returns kvs without key.
func DeleteKV(kvs []KV, key string) []KV {
	out := kvs[:0]
	for _, kv := range kvs {
		if kv.Key != key {
			out = append(out, kv)
		}
	}
	return out
}
