// Package models is Tadpole's model store: it turns model names
// ("[host/][namespace/]model[:tag]") into GGUF files on disk. Its
// sub-packages read and write GGUF (gguf) and generate deterministic test
// models (testmodels).
//
// The store never loads weights and never lets a name reach outside its
// directory.
package models
