// Compiles llama.cpp's tools/mtmd/models/kimivl.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/kimivl.cpp"
