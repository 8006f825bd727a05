// Compiles llama.cpp's tools/mtmd/models/llava.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/llava.cpp"
