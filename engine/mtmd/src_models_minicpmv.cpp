// Compiles llama.cpp's tools/mtmd/models/minicpmv.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/minicpmv.cpp"
