// ObjectPool's members (included by internal.h). Objects are plain structs
// with magic, generation and next_free members; chunks come from calloc and
// are never freed, so any address once handed out stays safe to inspect.
#pragma once

#include <cstdlib>

namespace gpushare::simgpu::driver {

template <class T>
T* ObjectPool<T>::acquire() {
  if (free_ == nullptr) {
    Chunk* chunk = static_cast<Chunk*>(std::calloc(1, sizeof(Chunk)));
    if (chunk == nullptr) return nullptr;
    chunk->next = chunks_;
    chunks_ = chunk;
    for (int i = kChunkObjects - 1; i >= 0; --i) {
      chunk->objects[i].next_free = free_;
      free_ = &chunk->objects[i];
    }
  }
  T* object = free_;
  free_ = object->next_free;
  std::uint32_t generation = object->generation;
  std::memset(static_cast<void*>(object), 0, sizeof *object);
  object->generation = generation + 1;
  return object;
}

template <class T>
void ObjectPool<T>::release(T* object) {
  object->magic = 0;
  ++object->generation;
  object->next_free = free_;
  free_ = object;
}

template <class T>
bool ObjectPool<T>::owns(const void* pointer) const {
  std::uintptr_t address = reinterpret_cast<std::uintptr_t>(pointer);
  for (const Chunk* chunk = chunks_; chunk != nullptr; chunk = chunk->next) {
    std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(&chunk->objects[0]);
    std::uintptr_t end = begin + sizeof chunk->objects;
    if (address >= begin && address < end) return (address - begin) % sizeof(T) == 0;
  }
  return false;
}

}  // namespace gpushare::simgpu::driver
