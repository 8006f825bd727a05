// Compiles llama.cpp's tools/mtmd/models/cogvlm.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/cogvlm.cpp"
