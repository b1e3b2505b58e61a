// Read bandwidth of a buffer of N MiB (argument, default 256) with OMP_NUM_THREADS threads, six passes:
// where this VM's caches end and what DRAM gives. gcc -O2 -fopenmp -mavx512f dram_bw.c -o dram_bw
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <immintrin.h>
int main(int argc,char**argv){ size_t n=(argc>1?atol(argv[1]):256)<<20; n/=4; float*a=aligned_alloc(64,n*4); for(size_t i=0;i<n;i++)a[i]=1.f;
 for(int rep=0;rep<6;rep++){ double t=omp_get_wtime(); float tot=0;
 #pragma omp parallel for reduction(+:tot)
 for(size_t i=0;i<n;i+=64){ __m512 s=_mm512_setzero_ps(); for(int j=0;j<64;j+=16) s=_mm512_add_ps(s,_mm512_load_ps(a+i+j)); tot+=_mm512_reduce_add_ps(s);} t=omp_get_wtime()-t; printf("%zu MiB: %.1f GB/s (%g)\n",n*4>>20,n*4/t/1e9,tot);} }
