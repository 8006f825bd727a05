// Compiles llama.cpp's tools/mtmd/models/glm4v.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/glm4v.cpp"
