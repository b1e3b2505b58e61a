#pragma once
// Internal to engine/graph: a visitor from lambdas, one per alternative of OpParams
// (std::visit(overloaded{...}, params)), so a new op that misses a case fails to compile.
namespace gpen::graph_detail {

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

}  // namespace gpen::graph_detail
