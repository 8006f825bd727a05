// Compiles llama.cpp's tools/mtmd/models/qwen3vl.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/qwen3vl.cpp"
