// A patterns module that declares nothing.
cgc.module @nothing {
}
