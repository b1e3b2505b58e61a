#include <immintrin.h>
#include <stdio.h>
#include <time.h>
int main(){
  __m512 a[12]; __m512 b=_mm512_set1_ps(1.0000001f), c=_mm512_set1_ps(1e-7f);
  for(int i=0;i<12;i++) a[i]=_mm512_set1_ps(i);
  struct timespec t0,t1; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t0);
  long n=200000000;
  for(long k=0;k<n;k++){ for(int i=0;i<12;i++) a[i]=_mm512_fmadd_ps(a[i],b,c); }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t1);
  double s=(t1.tv_sec-t0.tv_sec)+1e-9*(t1.tv_nsec-t0.tv_nsec);
  float r=0; for(int i=0;i<12;i++) r+=_mm512_reduce_add_ps(a[i]);
  printf("%.1f GFLOP/s (%g)\n", n*12.0*32/s/1e9, r);
}
