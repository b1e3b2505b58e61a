#pragma once
// Which photo flow a face model runs, decided by its file: the .gpw's arch, looked up in one table.
// GPEN files ("gpen") run GPEN's official flow (pipeline.h); GFPGAN files ("gfpgan") run
// GFPGANer.enhance's facexlib flow, RestoreFormer files ("restoreformer") RestoreFormer.enhance's
// (the same helper) and CodeFormer files ("codeformer") inference_codeformer.py's (facexlib_flow.h).
#include <string>

namespace gpen {

enum class FaceFlow { gpen, gfpgan, codeformer, restoreformer };

// The flow of a face model's arch. Any other arch, and a file that is no .gpw, go to GPEN's flow,
// whose model opening says what is wrong with the file (as it always has).
FaceFlow face_flow_of_arch(const std::string& arch);
// The flow of a model file (its .gpw header's arch).
FaceFlow face_flow_of_file(const std::string& gpw_path);
// "GPEN", "GFPGAN", "CodeFormer" or "RestoreFormer": how messages name the model kind.
const char* face_flow_name(FaceFlow f);
// The .gpw arch of the flow's models ("gpen", "gfpgan", "codeformer", "restoreformer").
const char* face_flow_arch(FaceFlow f);
// GFPGAN, CodeFormer and RestoreFormer: the facexlib family's flow (one 512 face per run, paste by facexlib's rules).
inline bool is_facexlib_flow(FaceFlow f) { return f != FaceFlow::gpen; }

}  // namespace gpen
