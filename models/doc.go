// Package models is Tadpole's model store: it turns model names
// ("[host/][namespace/]model[:tag]", completed like Ollama's to
// registry.ollama.ai/library/…:latest) into GGUF files on disk, and
// creates, copies and deletes models.
//
// The on-disk layout is Ollama's, so `tadpole serve --models
// ~/.ollama/models` serves what a user pulled with Ollama:
//
//	manifests/<host>/<namespace>/<model>/<tag>   JSON manifest (Docker v2)
//	blobs/sha256-<hex>                           content-addressed blobs
//
// A manifest's layers are the GGUF model, and optionally a template, a
// system prompt, params (a JSON object of options), licenses, LoRA
// adapters, a multimodal projector and messages (a JSON array). A bare
// NAME.gguf file in the store's directory is the model NAME:latest too.
//
// The package also parses and writes Modelfiles ([ParseModelfile],
// [Modelfile.String], [ModelfileFor]) and builds models from them
// ([Store.Create]). Its sub-packages read and write GGUF (gguf), pull
// and push models over Ollama's registry protocol (registry), quantize
// a model into the store through the engine (quantize, the one that
// links llama.cpp), and generate deterministic test models
// (testmodels).
//
// The store never loads weights and never lets a name or a digest reach
// outside its directory: names are validated part by part ([ParseName])
// and blob paths are built only from checked sha256 digests. Nothing is
// ever half-written: blobs and manifests go to a temporary file that is
// renamed into place. The package is pure Go (no cgo) and imports
// nothing from engine/ or server/ (models/quantize does, for the
// quantizer).
package models
