// Compiles llama.cpp's tools/mtmd/models/llama4.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/llama4.cpp"
