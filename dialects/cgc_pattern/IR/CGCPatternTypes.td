//===- CGCPatternTypes.td - Types of the cgc_pattern dialect -*- tablegen -*-===//

#ifndef CGC_PATTERN_TYPES_TD
#define CGC_PATTERN_TYPES_TD

include "cgc_pattern/IR/CGCPatternDialect.td"

def CGCPattern_ValueType : TypeDef<CGCPattern_Dialect, "Value"> {
  let mnemonic = "value";
  let summary = "A tensor in a pattern";
  let description = [{
    Stands for one tensor of the graph being matched: the result of a matched
    layer or an input from outside the match. Its concrete type is checked
    against the constraints of the op that defines it.

    ```mlir
    %x = cgc_pattern.input
    ```
  }];
}

#endif // CGC_PATTERN_TYPES_TD
