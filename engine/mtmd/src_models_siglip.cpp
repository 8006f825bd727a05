// Compiles llama.cpp's tools/mtmd/models/siglip.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/siglip.cpp"
