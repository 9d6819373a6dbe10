//===- Ep.h - The cgc execution provider ------------------------*- C++ -*-===//

#ifndef CGC_ORT_EP_EP_H
#define CGC_ORT_EP_EP_H

#include "Common.h"

namespace cgc::ort_ep {

struct Factory;

OrtEp *createEp(Factory &factory, DriverDevice &driver, const OrtSessionOptions *options,
                const OrtLogger *logger);
void releaseEp(OrtEp *ep);

} // namespace cgc::ort_ep

#endif // CGC_ORT_EP_EP_H
