// Compiles llama.cpp's tools/mtmd/models/internvl.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/internvl.cpp"
