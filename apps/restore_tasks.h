#pragma once
// `gpen restore --task enhance|colorize|inpaint|seg2face` and `--seed`: the options, and the
// checks that refuse combinations the official flows do not have.
#include <CLI/CLI.hpp>

#include "apps/restore_common.h"

namespace gpen::cli::restore_detail {

void add_task_options(CLI::App& sub, RestoreArgs& a);
// Takes the task recorded in the .gpw (`gpen convert --task`) when --task was not given, then
// throws gpen::Error explaining what the official flow does when the options make no sense.
void finish_task_options(RestoreArgs& a);

}  // namespace gpen::cli::restore_detail
