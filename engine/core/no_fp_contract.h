// Included last by the files that reproduce another library's float arithmetic (OpenCV, NumPy,
// PyTorch) step by step: from here on the compiler must not fuse a multiply and an add into one
// rounding (GCC does under -mfma), or results move by an ulp and, through later rounding to
// integers, occasionally a pixel. Where the reference itself fuses, the code says so with std::fma.
// No include guard on purpose: the pragma is for the including file.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
