// The restricted pickle interpreter: the opcodes PyTorch state dicts use, and refusal of
// everything else (code execution, malformed or hostile streams) with a one-line gpen::Error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "converter/pickle.h"
#include "engine/core/error.h"
#include "tests/converter_fixtures.h"

using namespace gpen;
using namespace gpen::conv;
using namespace gpen::conv::pickle;
using P = gpen_test::PickleBytes;

namespace {

// Builds pickle byte strings opcode by opcode.
const Object* load(Unpickler& up, const std::string& bytes) {
  ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "test");
  return up.load(r);
}

std::string load_error(const std::string& bytes, Limits lim = {}) {
  Unpickler up(lim);
  try {
    load(up, bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("pickle: scalars, containers and memo (protocols 2 and 4)") {
  // OrderedDict([('a', 1), ('b', [1.5, None, True, 'xx', 2**70, -5, 70000, -70000, (1, 2, 3), b'by'])]),
  // as pickle.dumps(..., protocol=4) writes it (FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL).
  P p;
  p.proto(4).op(0x95).u64(0).sstr("collections").op(0x94).sstr("OrderedDict").op(0x94).op(0x93).op(0x94);
  p.op(')').op('R').op(0x94).op('(').sstr("a").op(0x94).k(1).sstr("b").op(0x94).op(']').op(0x94).op('(');
  p.op('G').raw(std::string("\x3f\xf8\0\0\0\0\0\0", 8)).op('N').op(0x88).str("xx");
  p.op(0x8a).op(9).raw(std::string("\0\0\0\0\0\0\0\0\x40", 9));
  p.op('J').u32(0xfffffffb).op('J').u32(70000).op('J').u32(static_cast<uint32_t>(-70000));
  p.k(1).k(2).k(3).op(0x87).op(0x94).op('C').op(2).raw("by").op(0x94).op('e').op('u').stop();
  Unpickler up;
  const Object* d = load(up, p.b);
  REQUIRE(d->kind == Kind::Dict);
  CHECK(d->ordered);
  REQUIRE(d->entries.size() == 2);
  CHECK(d->get("a")->i == 1);
  const Object* l = d->get("b");
  REQUIRE(l->kind == Kind::List);
  REQUIRE(l->items.size() == 10);
  CHECK(l->items[0]->f == 1.5);
  CHECK(l->items[1]->kind == Kind::None);
  CHECK(l->items[2]->b);
  CHECK(l->items[3]->s == "xx");
  CHECK(l->items[4]->kind == Kind::BigInt);
  CHECK(l->items[5]->i == -5);
  CHECK(l->items[6]->i == 70000);
  CHECK(l->items[7]->i == -70000);
  REQUIRE(l->items[8]->kind == Kind::Tuple);
  CHECK(l->items[8]->items[2]->i == 3);
  CHECK(l->items[9]->kind == Kind::Bytes);

  // Protocol 2 style: GLOBAL + REDUCE, BINPUT/BINGET, SETITEM, DICT, LIST, TUPLE1/2, NEWFALSE.
  P q;
  q.proto(2).op('}').op('q').op(0).op('(').str("k").op('q').op(1).op(']').op('(').k(4).k(5).op('e');
  q.str("t").k(9).op(0x85).str("u").k(1).op(0x89).op(0x86).str("same").op('h').op(1).op('u');
  q.op('(').str("x").op('N').op('d').op('r').u32(70000).op('0').op('j').u32(70000).str("nested").op('s').stop();
  Unpickler up2;
  const Object* e = load(up2, q.b);
  REQUIRE(e->kind == Kind::Dict);
  CHECK(!e->ordered);
  CHECK(e->get("k")->items.size() == 2);
  CHECK(e->get("t")->items[0]->i == 9);
  CHECK(e->get("u")->items[1]->b == false);
  CHECK(e->get("same")->s == "k");  // BINGET returns the memoised object
  // DICT built {'x': None}; LONG_BINPUT/POP/LONG_BINGET brought it back, and SETITEM used it as
  // a key (value "nested"): non-string keys are kept but not indexed by name.
  REQUIRE(e->entries.size() == 5);
  CHECK(e->entries[4].first->kind == Kind::Dict);
  CHECK(e->entries[4].second->s == "nested");
}

TEST_CASE("pickle: torch tensors through persistent ids and the rebuild functions") {
  P p;
  p.proto(2).global("collections", "OrderedDict").op(')').op('R').op('(');
  p.str("w").global("torch._utils", "_rebuild_tensor_v2").op('(').storage("FloatStorage", "0", 12).k(2);
  p.k(2).k(3).op(0x86).k(3).k(1).op(0x86).op(0x89).global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
  p.str("p").global("torch._utils", "_rebuild_parameter");
  p.global("torch._utils", "_rebuild_tensor_v2").op('(').storage("HalfStorage", "1", 4).k(0).k(4).op(0x85).k(1).op(0x85);
  p.op(0x89).op('}').op('t').op('R').op(0x88).op('}').op(0x87).op('R');
  p.str("c").global("torch._utils", "_rebuild_tensor").op('(').storage("LongStorage", "2", 1).k(0).op(')').op(')').op('t').op('R');
  p.op('u').op('}').str("_metadata").op('}').op('s').op('b').stop();
  Unpickler up;
  const Object* d = load(up, p.b);
  REQUIRE(d->kind == Kind::Dict);
  const Object* w = d->get("w");
  REQUIRE(w->kind == Kind::Tensor);
  CHECK(w->tensor().storage_offset == 2);
  CHECK(w->tensor().size == std::vector<int64_t>{2, 3});
  CHECK(w->tensor().stride == std::vector<int64_t>{3, 1});
  CHECK(w->tensor().storage->storage().root == "0");
  CHECK(w->tensor().storage->storage().dtype == SrcDType::f32);
  CHECK(w->tensor().storage->storage().root_numel == 12);
  const Object* par = d->get("p");
  REQUIRE(par->kind == Kind::Tensor);
  CHECK(par->tensor().storage->storage().dtype == SrcDType::f16);
  CHECK(d->get("c")->tensor().size.empty());
  CHECK(up.storages().size() == 3);
  CHECK(up.storages().at("2").dtype == SrcDType::i64);
}

TEST_CASE("pickle: code execution and unsupported constructs are refused, never run") {
  CHECK(load_error(P().proto().global("os", "system").str("true").op(0x85).op('R').stop().b)
            .find("refusing unsupported global 'os.system'") != std::string::npos);
  CHECK(load_error(P().proto(4).sstr("builtins").sstr("eval").op(0x93).stop().b).find("builtins.eval") !=
        std::string::npos);
  CHECK(load_error(P().proto().global("torch.nn.modules.conv", "Conv2d").stop().b).find("Conv2d") != std::string::npos);
  CHECK(load_error(P().proto().global("_codecs", "encode").stop().b).find("_codecs.encode") != std::string::npos);
  CHECK(load_error(P().op('(').raw("iargparse\nNamespace\n").stop().b).find("INST") != std::string::npos);
  CHECK(load_error(P().op('(').op('o').stop().b).find("OBJ") != std::string::npos);
  CHECK(load_error(P().proto().op(0x82).op(1).stop().b).find("EXT") != std::string::npos);
  CHECK(load_error(P().proto().op(0xff).b).find("unsupported opcode 0xff") != std::string::npos);
  // A whitelisted global used the wrong way.
  CHECK(load_error(P().proto().global("torch", "FloatStorage").op(')').op('R').stop().b).find("refusing to call") !=
        std::string::npos);
  CHECK(load_error(P().proto().global("torch._utils", "_rebuild_tensor_v2").k(1).op(0x85).op('R').stop().b)
            .find("arguments") != std::string::npos);
  CHECK(load_error(P().proto().global("torch", "FloatStorage").op(')').op(0x81).stop().b).find("NEWOBJ") !=
        std::string::npos);
  CHECK(load_error(P().proto().k(1).op(')').op('R').stop().b).find("REDUCE on a int") != std::string::npos);
  CHECK(load_error(P().proto().op(']').op('}').op('b').stop().b).find("BUILD on a list") != std::string::npos);
  CHECK(load_error(P().proto().str("x").op('Q').stop().b).find("persistent id") != std::string::npos);
  CHECK(load_error(P().proto().op('(').str("storage").str("notatype").str("0").str("cpu").k(1).op('t').op('Q').stop().b)
            .find("storage type") != std::string::npos);
  // Storage declared twice with different sizes.
  CHECK(load_error(P().proto().storage("FloatStorage", "0", 4).storage("FloatStorage", "0", 5).op(0x86).stop().b)
            .find("declared twice") != std::string::npos);
}

TEST_CASE("pickle: malformed and hostile streams are bounded errors") {
  CHECK(load_error("").find("unexpected end") != std::string::npos);
  CHECK(load_error(P().proto().b).find("unexpected end") != std::string::npos);
  CHECK(load_error(P().proto(6).b).find("protocol 6") != std::string::npos);
  // Huge lengths are checked against the input before anything is allocated.
  CHECK(load_error(P().proto().op('X').u32(0xffffffffu).b).find("too long") != std::string::npos);
  CHECK(load_error(P().proto().op(0x8d).u64(uint64_t{1} << 62).b).find("too long") != std::string::npos);
  CHECK(load_error(P().proto().op('X').u32(1000).raw("abc").b).find("unexpected end") != std::string::npos);
  CHECK(load_error(P().proto().op(0x8b).u32(0x7fffffff).b).find("too long") != std::string::npos);
  CHECK(load_error(P().proto().op('h').op(3).stop().b).find("memo key 3") != std::string::npos);
  CHECK(load_error(P().proto().op('a').b).find("underflow") != std::string::npos);
  CHECK(load_error(P().proto().op('t').b).find("MARK") != std::string::npos);
  CHECK(load_error(P().proto().k(1).k(2).stop().b).find("STOP with 2") != std::string::npos);
  CHECK(load_error(P().proto().k(1).op('a').stop().b).find("underflow") != std::string::npos);
  CHECK(load_error(P().proto().k(1).k(1).op('a').stop().b).find("APPEND to a int") != std::string::npos);
  CHECK(load_error(P().proto().op('(').k(1).op('d').stop().b).find("odd") != std::string::npos);
  // A mark hides what is below it.
  CHECK(load_error(P().proto().op(']').op('(').op('a').b).find("underflow") != std::string::npos);
  // Tensor metadata out of range.
  auto tensor = [](const std::string& size_tuple, int offset) {
    return P().proto().global("torch._utils", "_rebuild_tensor").op('(').storage("FloatStorage", "0", 4).k(offset)
        .raw(size_tuple).raw(size_tuple).op('t').op('R').stop().b;
  };
  CHECK(load_error(tensor(P().op('(').k(1).k(1).k(1).k(1).k(1).k(1).k(1).k(1).k(1).op('t').b, 0)).find("rank 9") !=
        std::string::npos);
  CHECK(load_error(tensor(P().op('J').u32(0xffffffffu).op(0x85).b, 0)).find("out of range") != std::string::npos);
  CHECK(load_error(P().proto().op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu")
                       .op(0x8a).op(8).u64(uint64_t{1} << 60).op('t').op('Q').stop().b)
            .find("out-of-range size") != std::string::npos);
  // Object budget.
  P many;
  many.proto().op(']');
  for (int i = 0; i < 300; ++i) many.k(1).op('a');
  many.stop();
  Limits lim;
  lim.max_objects = 100;
  CHECK(load_error(many.b, lim).find("more than 100 objects") != std::string::npos);
  CHECK(load_error(many.b).empty());
  // A truncated valid pickle fails at every length.
  P good;
  good.proto().op('}').op('(').str("a").global("collections", "OrderedDict").op(')').op('R').str("b").k(3).op('u').stop();
  CHECK(load_error(good.b).empty());
  for (size_t n = 0; n < good.b.size(); ++n) CHECK(!load_error(good.b.substr(0, n)).empty());
}

TEST_CASE("pickle: cyclic structures cost nothing (arena-owned, no leak under ASan)") {
  // l = []; l.append(l); d = {'l': l}; d['d'] = d
  P p;
  p.proto().op('}').op('q').op(0).str("l").op(']').op('q').op(1).op('h').op(1).op('a').op('s');
  p.str("d").op('h').op(0).op('s').stop();
  Unpickler up;
  const Object* d = load(up, p.b);
  CHECK(d->get("d") == d);
  CHECK(d->get("l")->items[0] == d->get("l"));
}

TEST_CASE("pickle: several pickles in a row (the legacy format) share one interpreter") {
  std::string s = P().proto().k(1).stop().b + P().proto().str("two").stop().b;
  ByteReader r(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "test");
  Unpickler up;
  CHECK(up.load(r)->i == 1);
  CHECK(up.load(r)->s == "two");
  CHECK(r.at_end());
}
