package testmodels

import (
	"path/filepath"
	"runtime"
)

// Testdata is the absolute path of a file in the repository's
// models/testdata directory (the committed fixtures: stories260K.gguf,
// stories260Ktok512.gguf, unsupported/…), wherever the caller runs from.
func Testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}
