// Compiles llama.cpp's tools/mtmd/models/pixtral.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/pixtral.cpp"
